"""serve's seconds options and ServerLimits refuse nan, inf and <= 0 (found by the attack)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli

_OPTIONS = [
    "--validate-seconds",
    "--header-timeout",
    "--body-timeout",
    "--upload-expiry",
    "--checkpoint-every",
]


@pytest.mark.parametrize("option", _OPTIONS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_serve_refuses_seconds_that_are_not_finite_and_positive(option, value, tmp_path):
    url = f"sqlite:///{tmp_path / 'never-opened.db'}"
    r = CliRunner().invoke(cli, ["--store", url, "serve", "--port", "0", option, value])
    assert r.exit_code == 2, r.output  # a usage error, not a traceback (exit 1)
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert option in r.output and "Traceback" not in r.output
    assert not (tmp_path / "never-opened.db").exists()


@pytest.mark.parametrize(
    "field", ["validate_seconds", "header_timeout", "body_timeout", "upload_expiry"]
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0, True, "10"])
def test_server_limits_refuse_seconds_that_are_not_finite_and_positive(field, value):
    with pytest.raises(evstore.EvstoreError) as caught:
        evstore.ServerLimits(**{field: value})
    assert caught.value.code == "input.invalid" and field in str(caught.value)


def test_server_limits_keep_finite_positive_seconds():
    limits = evstore.ServerLimits(header_timeout=0.5, upload_expiry=7200)
    assert limits.header_timeout == 0.5 and limits.upload_expiry == 7200


def test_serve_library_refuses_an_infinite_checkpoint_interval(tmp_path):
    url = f"sqlite:///{tmp_path / 'never-opened.db'}"
    for every in (float("inf"), float("nan"), 0.0):
        with pytest.raises(evstore.EvstoreError) as caught:
            evstore.create_app({None: url}, checkpoint_every=every)
        assert caught.value.code == "input.invalid"
