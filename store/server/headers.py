"""The headers every answer of the server carries, whatever route or error made it.

:class:`SecurityHeaders` is the root app's middleware, just inside the limits guard (whose
own refusals are problem answers, which carry the header themselves): every
``http.response.start`` gets ``X-Content-Type-Options: nosniff`` unless the answer set
it, so no browser guesses a type for stored bytes, a problem body or an error page
(issue 23: a stored script ran from the same origin without it).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SecurityHeaders"]

_NOSNIFF = (b"x-content-type-options", b"nosniff")


class SecurityHeaders:
    """ASGI middleware adding ``X-Content-Type-Options: nosniff`` to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` through the wrapped app, adding the header to its answer."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if not any(name.lower() == _NOSNIFF[0] for name, _ in headers):
                    headers.append(_NOSNIFF)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
