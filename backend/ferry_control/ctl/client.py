"""The HTTP client: one method per kind of request, every failure turned into a `CtlError` with the API's own
message (the body `{"error": {"code", "message"}}`) and the exit code its status maps to; clusters and servers
named by name or id."""

from __future__ import annotations

from typing import Any

import httpx

from ferry_control.ctl.config import Config
from ferry_control.ctl.errors import CtlError, ExitCode, exit_code_for_status

API = "/api/v1"


def _api_error(response: httpx.Response) -> CtlError:
    code, message = None, None
    try:
        error = response.json().get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
    except ValueError:
        pass
    if not message:
        message = f"the API answered {response.status_code} {response.reason_phrase}"
    return CtlError(str(message), exit_code_for_status(response.status_code), code=code, status=response.status_code)


class Client:
    def __init__(self, config: Config, transport: httpx.BaseTransport | None = None):
        headers = {"Accept": "application/json", "User-Agent": "ferryctl"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        self.url = config.url
        self._http = httpx.Client(base_url=config.url, headers=headers, timeout=config.timeout_s, transport=transport)

    def close(self) -> None:
        self._http.close()

    def _send(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:  # fmt: skip
        try:
            response = self._http.request(method, API + path, json=json, params=params, headers=headers)
        except httpx.TimeoutException:
            raise CtlError(f"the API at {self.url} did not answer in time", ExitCode.unreachable) from None
        except httpx.TransportError as e:
            raise CtlError(f"cannot reach the API at {self.url}: {e}", ExitCode.unreachable) from None
        if response.status_code >= 400:
            raise _api_error(response)
        return response

    def request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:  # fmt: skip
        """`path` below /api/v1; returns the decoded JSON body (None for 204)."""
        response = self._send(method, path, json=json, params=params, headers=headers)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise CtlError(
                f"the answer from {self.url}{API}{path} is not JSON (is this Ferry's API?)", ExitCode.error
            ) from None

    def text(self, path: str, **params: Any) -> str:
        """A GET whose answer is text (a rendered configuration)."""
        return self._send("GET", path, params={k: v for k, v in params.items() if v is not None} or None).text

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None} or None)

    def post(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, json=body, headers=headers)

    def cluster(self, ref: str) -> dict[str, Any]:
        """A cluster by name, else (a number) by id."""
        clusters = self.get("/clusters")
        found = _pick(clusters, ref)
        if found is None:
            raise CtlError(f"no cluster named {ref!r}", ExitCode.not_found, code="not_found")
        return found

    def server(self, cluster: dict[str, Any], ref: str) -> dict[str, Any]:
        """A server of the cluster by name, else (a number) by id."""
        found = _pick(self.get(f"/clusters/{cluster['id']}/servers"), ref)
        if found is None:
            raise CtlError(
                f"no server named {ref!r} in cluster {cluster['name']!r}", ExitCode.not_found, code="not_found"
            )
        return found


def _pick(rows: list[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    """The row named `ref`; else, when `ref` is a number, the row with that id (a name wins over an id)."""
    for row in rows:
        if row.get("name") == ref:
            return row
    if ref.isdigit():
        for row in rows:
            if row.get("id") == int(ref):
                return row
    return None
