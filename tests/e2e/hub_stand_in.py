"""A stand-in for the Hugging Face Hub's HTTP API on 127.0.0.1, serving repos made of local files,
for the tests of model names (tests/e2e/test_hf_hub.py, tests/python/test_hf_hub.py).

What the Hub answers and huggingface_hub reads:
- GET /api/models/ORG/NAME/revision/REV: {"sha": commit, "siblings": [{"rfilename": ...}]}
- GET /api/models/ORG/NAME/tree/REV: the file list huggingface_hub's snapshot_download reads
- GET|HEAD /ORG/NAME/resolve/REV/FILE: small files directly (ETag: their git blob id); LFS files
  (.gguf, .safetensors) a 302 to the "CDN" (/cdn/SHA256 on http://localhost:PORT, another origin)
  with X-Linked-Etag (the SHA-256) and X-Linked-Size
- errors as the Hub's: 404 + X-Error-Code RepoNotFound / RevisionNotFound; a gated repo 401 +
  GatedRepo; a private repo 401 + RepoNotFound unless the request carries its token.
Every request is recorded (method, path, Authorization) for the tests to count.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".gguf", ".safetensors")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Commit:
    def __init__(self, files: dict[str, bytes]):
        self.files = files
        h = hashlib.sha1()
        for name in sorted(files):
            h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
        self.sha = h.hexdigest()


class Repo:
    def __init__(self, branches: dict[str, dict[str, bytes]], gated: bool = False, token: str | None = None,
                 truncate: bool = False):
        self.branches = {name: Commit(files) for name, files in branches.items()}
        self.gated = gated
        self.token = token        # private: only requests with this bearer token see it
        self.truncate = truncate  # LFS bodies are cut short (a download that breaks off)

    def commit(self, revision: str) -> Commit | None:
        if revision in self.branches:
            return self.branches[revision]
        return next((c for c in self.branches.values() if c.sha == revision), None)


class HubStandIn:
    def __init__(self, repos: dict[str, Repo], tls=None):
        """tls: an ssl.SSLContext (server side) to serve https instead of http."""
        self.repos = repos
        self.scheme = "https" if tls else "http"
        self.requests: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()
        self._blobs = {hashlib.sha256(d).hexdigest(): (d, r.truncate)
                       for r in repos.values() for c in r.branches.values() for d in c.files.values()}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        if tls:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> "HubStandIn":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def since(self, n: int) -> list[tuple[str, str, str | None]]:
        with self._lock:
            return list(self.requests[n:])

    def _record(self, method: str, path: str, auth: str | None) -> None:
        with self._lock:
            self.requests.append((method, path, auth))

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                self._serve(head=True)

            def do_GET(self):
                self._serve(head=False)

            def _send(self, status, body=b"", headers=None, head=False, length=None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _error(self, status, code, message, head):
                self._send(status, json.dumps({"error": message}).encode(),
                           {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}, head)

            def _serve(self, head):
                path = urllib.parse.urlsplit(self.path).path
                hub._record(self.command, path, self.headers.get("Authorization"))
                parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
                if parts[0] == "cdn" and len(parts) == 2 and parts[1] in hub._blobs:
                    data, truncate = hub._blobs[parts[1]]
                    if truncate:  # promise all, send half, hang up
                        return self._send(200, data[: len(data) // 2], head=head, length=len(data))
                    return self._send(200, data, {"Content-Type": "application/octet-stream"}, head)
                if parts[0] == "api" and len(parts) >= 5 and parts[1] == "models":
                    return self._api(parts[2] + "/" + parts[3], parts[4], "/".join(parts[5:]), head)
                if len(parts) >= 5 and parts[2] == "resolve":
                    return self._resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]), head)
                self._error(404, "EntryNotFound", "no such route", head)

            def _repo(self, name, head):
                repo = hub.repos.get(name)
                if repo is None:
                    self._error(404, "RepoNotFound", f"Repository Not Found for url: {self.path}", head)
                elif repo.gated and self.headers.get("Authorization") is None:
                    self._error(401, "GatedRepo", f"Access to model {name} is restricted. You must have access to "
                                "it and be authenticated to access it. Please log in.", head)
                elif repo.token and self.headers.get("Authorization") != f"Bearer {repo.token}":
                    self._error(401, "RepoNotFound", f"Repository Not Found for url: {self.path}", head)
                else:
                    return repo
                return None

            def _commit(self, repo, revision, head):
                commit = repo.commit(revision)
                if commit is None:
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
                return commit

            def _api(self, name, kind, revision, head):
                repo = self._repo(name, head)
                commit = repo and self._commit(repo, revision, head)
                if commit is None:
                    return
                if kind == "revision":
                    body = {"id": name, "modelId": name, "sha": commit.sha, "private": bool(repo.token),
                            "gated": "auto" if repo.gated else False,
                            "siblings": [{"rfilename": f} for f in sorted(commit.files)]}
                elif kind == "tree":
                    body = []
                    for f in sorted(commit.files):
                        data = commit.files[f]
                        entry = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": f}
                        if f.endswith(LFS_SUFFIXES):
                            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                            "pointerSize": 134}
                        body.append(entry)
                else:
                    return self._error(404, "EntryNotFound", "no such route", head)
                self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)

            def _resolve(self, name, revision, file, head):
                repo = self._repo(name, head)
                commit = repo and self._commit(repo, revision, head)
                if commit is None:
                    return
                if file not in commit.files:
                    return self._error(404, "EntryNotFound", f"{file} does not exist on {revision}", head)
                data = commit.files[file]
                common = {"X-Repo-Commit": commit.sha}
                if file.endswith(LFS_SUFFIXES):
                    digest = hashlib.sha256(data).hexdigest()
                    cdn = f"{hub.scheme}://localhost:{hub.port}/cdn/{digest}"
                    return self._send(302, b"", dict(common, Location=cdn, **{
                        "X-Linked-Etag": f'"{digest}"', "X-Linked-Size": str(len(data)), "ETag": f'"{git_blob_id(data)}"'}),
                        head)
                self._send(200, data, dict(common, ETag=f'"{git_blob_id(data)}"'), head)

        return Handler


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
