"""``check`` of a remote store: run by the server, faults streamed back (issue 28).

``POST /v1/check`` (admin) answers NDJSON lines (store/server/check_routes.py). A
:class:`RemoteCheckRun` is what :meth:`evstore.Store.check` returns locally: an iterator of
the faults (the server's errors rebuilt, with the same codes and ``details["address"]``) whose
``checked``, ``recorded`` and ``not_recorded`` are known at the end; ``progress(done, total)``
is called as progress lines arrive. Closing the run (or dropping the connection, as Ctrl-C
does) stops the server's run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import EvstoreError, error
from .http import rebuild_error

if TYPE_CHECKING:
    from .http import Http

__all__ = ["RemoteCheckRun"]


class RemoteCheckRun(Iterator[EvstoreError]):
    """The faults of a check run by the server; counters are set by its last line.

    Attributes:
        checked, recorded, not_recorded: as :class:`evstore.check.checker.CheckRun`.
        recorded_warnings: the warnings recorded at ingest (``Store.recorded_warnings``).
        warnings: the kinds' audit warnings of this run.
    """

    def __init__(
        self,
        http: Http,
        progress: Callable[[int, int], Any] | None,
        *,
        sample: float | None = None,
        seed: int = 0,
        kinds: Sequence[str] = (),
        since: Any = None,
        jobs: int = 1,
        record: bool = True,
        warnings: list[dict[str, str]] | None = None,
    ) -> None:
        self.checked = 0
        self.recorded = 0
        self.not_recorded: str | None = None
        self.recorded_warnings: list[dict[str, str]] = []
        self.warnings: list[dict[str, str]] = [] if warnings is None else warnings
        self._http = http
        self._progress = progress
        body: dict[str, Any] = {"seed": seed, "kinds": list(kinds), "jobs": jobs}
        body["record"] = record
        if sample is not None:
            if isinstance(sample, float) and not math.isfinite(sample):  # JSON has no NaN
                raise error("input.invalid", f"sample {sample!r} is not in (0, 1]", option="sample")
            body["sample"] = sample
        if since is not None:
            body["since"] = since.isoformat() if hasattr(since, "isoformat") else str(since)
        # options are judged by the server before its answer starts (a problem, raised here)
        self._resp = http.request("POST", "v1/check", idempotent=False, json=body, stream=True)
        self._gen = self._run()

    def _run(self) -> Generator[EvstoreError, None, None]:
        ended = False
        try:
            for line in self._resp.iter_lines():
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    raise self._http.protocol("POST v1/check: a line is not JSON") from None
                if "fault" in event:
                    yield rebuild_error(event["fault"])
                elif "progress" in event and self._progress is not None:
                    done, total = event["progress"]
                    self._progress(int(done), int(total))
                elif "end" in event:
                    end = event["end"]
                    self.checked = int(end["checked"])
                    self.recorded = int(end["recorded"])
                    self.not_recorded = end.get("not_recorded")
                    self.recorded_warnings = list(end.get("recorded_warnings") or [])
                    self.warnings.extend(end.get("audit_warnings") or [])
                    ended = True
                elif "error" in event:
                    raise rebuild_error(event["error"])
        except EvstoreError:
            raise
        except Exception as exc:  # a broken transfer
            raise self._http.protocol(f"POST v1/check: the stream broke off ({exc})") from None
        finally:
            self._resp.close()
        if not ended:
            raise self._http.protocol("POST v1/check: the stream ended before the run did")

    def __iter__(self) -> RemoteCheckRun:
        return self

    def __next__(self) -> EvstoreError:
        return next(self._gen)

    def close(self) -> None:
        """Stop the run: the connection closes and the server stops at its next object."""
        self._gen.close()
        self._resp.close()
