"""One code table: every code raised in store/ and cli/ is a row of evstore.core.errors.CODES.

Raise sites are found in the source (tools/gen_docs.py ``raise_sites``, which also writes the
"raised in" column of docs/errors.md): the ``code=`` keyword of any call, the code argument of
``error(...)``, ``Faults.add``/``warn`` and any helper or fault record with a ``code``
parameter or field, resolved through module constants (``CODE_X = "package.schema"``, the
``rule-*`` -> code maps of the JSON Schema checks) and local assignments.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

import evstore
from evstore.core import errors
from evstore.core.errors import CODES, EvstoreError, Faults, error, error_class

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = {"input", "contract", "binding", "not-found", "corruption", "store"}
FAMILY_CLASS = {
    "input": errors.InputError,
    "contract": errors.ContractError,
    "binding": errors.BindingConflict,
    "not-found": errors.NotFound,
    "corruption": errors.CorruptionError,
    "store": errors.StoreStateError,
}
#: Codes in the table that nothing raises yet, each with the reason it stays. Keep it short:
#: a code nobody raises is documented for nothing.
RESERVED: dict[str, str] = {}


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def sites() -> dict[str, list[tuple[str, int]]]:
    return _gen().raise_sites()


def test_the_detector_sees_every_kind_of_raise_site(tmp_path, monkeypatch):
    gen = _gen()
    (tmp_path / "store").mkdir()
    (tmp_path / "cli").mkdir()
    (tmp_path / "store" / "sample.py").write_text(
        "from .errors import error\n"
        'CODE_A = "demo.a"\n'
        'RULES = {"rule-b": ("demo.b", "message"), "rule-c": (CODE_A, "m")}\n'
        'NAMESPACE = "demo.namespace"\n'
        "class Fault(NamedTuple):\n    where: int\n    code: str\n"
        "def _err(pointer, code, message):\n    return error(code, message, pointer)\n"
        "def f(faults, rule, x):\n"
        '    faults.add("demo.c", "m")\n'
        '    faults.warn("demo.d" if x else CODE_A, "m")\n'
        "    code, message = RULES[rule]\n    raise error(code, message)\n"
        '    raise InputError("m", code="demo.e")\n'
        '    _err("/p", "demo.f", "m")\n'
        '    Fault(1, "demo.g")\n'
        "    bind(NAMESPACE, x)\n"
        '    seen = {"demo.not-a-code"}\n'
    )
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    found = gen.raise_sites()
    assert set(found) == {f"demo.{c}" for c in "abcdefg"}
    assert found["demo.c"] == [("store/sample.py", 11)]


def test_every_raised_code_is_in_the_table(sites):
    unknown = {code: where for code, where in sites.items() if code not in CODES}
    assert not unknown, f"codes raised but missing from evstore.core.errors.CODES: {unknown}"


def test_every_table_code_is_raised_somewhere(sites):
    assert set(RESERVED) <= set(CODES)
    assert not set(RESERVED) & set(sites), "a reserved code is raised: drop it from RESERVED"
    never = sorted(set(CODES) - set(sites) - set(RESERVED))
    assert not never, f"codes in the table that store/ and cli/ never raise: {never}"


def test_families_are_valid_and_decide_the_class():
    for code, entry in CODES.items():
        assert entry.code == code
        assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", code), code
        assert entry.family in FAMILIES, code
        assert entry.meaning.strip(), code
        assert entry.rule == entry.rule.strip(), code
        cls = error_class(code)
        assert issubclass(cls, FAMILY_CLASS[entry.family]), code
        assert cls.family == entry.family, code
        err = error(code, "message", "/a")
        assert isinstance(err, cls) and err.code == code and err.family == entry.family
        assert err.rule == entry.rule and err.pointer == "/a"
        faults = Faults()
        faults.add(code, "message")
        assert faults.first().family == entry.family


def test_contract_and_binding_codes_name_their_rule():
    """Every contract or binding fault names the contract section it enforces by default."""
    missing = sorted(
        code for code, c in CODES.items() if c.family in ("contract", "binding") and not c.rule
    )
    assert not missing, f"contract/binding codes with no rule in the table: {missing}"


def test_an_explicit_error_class_agrees_with_the_table():
    """``SomeError(..., code="x")`` raises x in SomeError's family: it must be x's family."""
    classes = {
        name: obj
        for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, EvstoreError)
    }
    bad = []
    for folder in ("store", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                cls = classes.get(name)
                if cls is None or (
                    isinstance(func, ast.Attribute)
                    and not (
                        isinstance(func.value, ast.Name) and func.value.id in {"evstore", "errors"}
                    )
                ):
                    continue
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant):
                        code = kw.value.value
                        if code in CODES and CODES[code].family != cls.family:
                            rel = path.relative_to(ROOT)
                            bad.append(
                                f"{rel}:{node.lineno}: {name} ({cls.family}) raises {code} "
                                f"({CODES[code].family} in the table)"
                            )
    assert not bad, "\n".join(bad)


def test_docs_errors_md_is_the_table_with_its_raise_sites():
    gen = _gen()
    text = (ROOT / "docs" / "errors.md").read_text()
    rows = re.findall(r"^\| `([^`]+)` \| ([a-z-]+) \| (.*?) \| (.*?) \| (.*) \|$", text, re.M)
    assert [r[0] for r in rows] == sorted(CODES)
    raised = gen.raised_codes()
    for code, family, rule, where, meaning in rows:
        entry = CODES[code]
        assert family == entry.family and meaning == entry.meaning, code
        assert rule == (f"`{entry.rule}`" if entry.rule else "-"), code
        expected = ", ".join(m.removesuffix(".py") for m in raised.get(code, [])) or "-"
        assert where == expected, code


def test_binding_namespaces_are_not_taken_for_codes(sites):
    # Binding namespaces and kind names look like codes; the docs must not list them as raised.
    for code in sites:
        assert code in CODES or not code.startswith(("fragment.", "manifest.", "package.")), code
    assert "fragment.scope" not in sites


def test_the_public_error_families_are_the_table_s():
    for cls in FAMILY_CLASS.values():
        assert getattr(evstore, cls.__name__) is cls


def test_faults_hold_errors_then_warnings_in_order():
    faults = Faults()
    assert faults.ok and not faults and len(faults) == 0 and faults.first() is None
    faults.raise_first()  # no error: nothing raised
    first = faults.add("fragment.range", "first", "/a", start=1, end=None)
    warning = faults.warn("package.context-bytes", "a warning", "/context/bytes")
    second = error("fragment.boundary", "second", "/b")
    faults.extend([second])
    assert not faults.ok and bool(faults) and len(faults) == 2
    assert list(faults) == [first, second] and faults.first() is first
    assert faults.warnings == [warning] and warning.family == "contract"
    assert first.details == {"start": 1}  # None details are dropped
    other = Faults()
    other.warn("package.context-tokens", "another", "/context/tokens")
    faults.extend(other)
    assert [w.code for w in faults.warnings] == ["package.context-bytes", "package.context-tokens"]
    with pytest.raises(errors.FragmentError) as raised:
        faults.raise_first()
    assert raised.value is first
    assert Faults.of(faults) is faults
    assert Faults.of([second]).errors == [second] and Faults.of(None).ok


def test_error_rule_path_and_unknown_codes():
    err = error("manifest.schema", "m", rule="orbidocs#narrower", path="in.json")
    assert err.rule == "orbidocs#narrower" and err.path == "in.json"
    assert err.to_dict()["path"] == "in.json" and str(err).startswith("in.json: manifest.schema")
    with pytest.raises(KeyError):
        error("no.such-code", "m")
    assert errors.escape_pointer("a/b~c") == "a~1b~0c"
    assert errors.join_pointer("/x", "a/b", 0) == "/x/a~1b/0"
