"""Store-level properties: equal JSON values get one address; stored bytes are canonical."""

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evstore import Document
from evstore.core.canonical import MAX_SAFE_INTEGER, dumps, loads

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=("Cs",)), max_size=8), children, max_size=4
        )
    ),
    max_leaves=20,
)


def _respell(value, seed):
    """The same JSON value written differently: key order shuffled, escapes, indentation."""
    rnd = random.Random(seed)

    def shuffle(v):
        if isinstance(v, dict):
            items = list(v.items())
            rnd.shuffle(items)
            return {k: shuffle(x) for k, x in items}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    return json.dumps(
        shuffle(value), ensure_ascii=rnd.random() < 0.5, indent=rnd.choice([None, 1, 3])
    ).encode()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=values, seed=st.integers(0, 2**16))
def test_equal_values_one_address_and_stored_bytes_canonical(store, value, seed):
    a = store.ingest([Document(json.dumps(value).encode(), kind="json")]).results[0]
    b = store.ingest([Document(_respell(value, seed), kind="json")]).results[0]
    assert a.digest == b.digest
    assert not b.new
    stored = store.get(a.digest.address)
    assert stored == dumps(loads(stored))
