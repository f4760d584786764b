"""Model names of the Hugging Face Hub (`--model ORG/NAME`), against a stand-in Hub on 127.0.0.1
(hub_stand_in.py) serving stories260K (tests/data/stories260K) as GGUF and as safetensors.

With HF_ENDPOINT at the stand-in and a temporary HF_HOME, `tessera generate --model org/tiny`
downloads into the cache in huggingface_hub's layout and gives the tokens the local file gives;
a second run with HF_HUB_OFFLINE=1 makes no request; an uncached name offline, a missing repo,
revision or file, a gated or private repo and a dead endpoint fail with one line naming the
model; a download cut short leaves nothing in snapshots/. huggingface_hub (when installed)
reads the cache the CLI wrote, as an independent check of its layout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hub_stand_in as hs  # noqa: E402
import server_fixture as sf  # noqa: E402

DATA = os.path.join(sf.source_dir(), "tests", "data", "stories260K")
GGUF = os.path.join(DATA, "stories260K-f32.gguf")
HF_DIR = os.path.join(DATA, "hf")
PROMPT = "Once upon a time"
TOKEN = "sekrit"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HubTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = sf.tessera_bin()
        if not os.access(cls.binary, os.X_OK):
            sf.skip(f"tessera binary not found at {cls.binary}")
        if not os.path.exists(GGUF):
            sf.skip(f"{GGUF} is missing")
        gguf, readme = hs.read(GGUF), b"# tiny\n"
        st = {"config.json": hs.read(os.path.join(HF_DIR, "config.json")),
              "model.safetensors": hs.read(os.path.join(HF_DIR, "model.safetensors")),
              "onnx/model.onnx": b"not loaded", "README.md": readme}
        cls.hub = hs.HubStandIn({
            # Files the engine does not load sit beside the weights: they must not be fetched.
            "org/tiny": hs.Repo({"main": {"stories260K-f32.gguf": gguf, "README.md": readme,
                                          "pytorch_model.bin": b"x" * 1000, "original/params.json": b"{}"},
                                 "v1": {"stories260K-f32.gguf": gguf, "README.md": b"# tiny v1\n"}}),
            "org/tiny-st": hs.Repo({"main": st}),
            "org/multi": hs.Repo({"main": {"a.gguf": gguf, "b.gguf": gguf}}),
            "org/gated": hs.Repo({"main": {"stories260K-f32.gguf": gguf}}, gated=True),
            "org/private": hs.Repo({"main": {"stories260K-f32.gguf": gguf}}, token=TOKEN),
            "org/broken": hs.Repo({"main": {"stories260K-f32.gguf": gguf + b"\0"}}, truncate=True),
        }).start()
        cls.home = tempfile.mkdtemp(prefix="tessera-hf-home-")
        cls.cache = os.path.join(cls.home, "hub")
        local = cls.generate(GGUF)
        assert local.returncode == 0, local.stderr
        cls.local_tokens = json.loads(local.stdout)["outputs"][0]["token_ids"]
        cls.local_text = json.loads(local.stdout)["outputs"][0]["text"]

    @classmethod
    def tearDownClass(cls):
        cls.hub.stop()
        shutil.rmtree(cls.home, ignore_errors=True)

    @classmethod
    def env(cls, offline=False, endpoint=None, home=None, **extra):
        env = sf.child_env()
        for k in ("HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
            env.pop(k, None)
        env.update(HF_HOME=home or cls.home, HF_ENDPOINT=endpoint or cls.hub.endpoint, **extra)
        if offline:
            env["HF_HUB_OFFLINE"] = "1"
        return env

    @classmethod
    def generate(cls, model, *args, **env):
        cmd = [cls.binary, "generate", "--model", model, "--max-tokens", "4", "--temperature", "0", "--device", "cpu",
               "--json", "--max-model-len", "256", *args]
        if "--prompt-token-ids" not in args:
            cmd += ["--prompt", PROMPT]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=cls.env(**env))

    def generate_ok(self, model, *args, **env):
        out = self.generate(model, *args, **env)
        self.assertEqual(out.returncode, 0, f"{model}: {out.stderr}")
        return json.loads(out.stdout.splitlines()[0])["outputs"][0]["token_ids"]

    def fails(self, model, *args, **env) -> str:
        out = self.generate(model, *args, **env)
        self.assertEqual(out.returncode, 1, out.stderr)  # an error, not a crash
        errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
        self.assertEqual(len(errors), 1, out.stderr)
        self.assertIn(model, errors[0])
        return errors[0]

    def repo_dir(self, repo, cache=None):
        return os.path.join(cache or self.cache, "models--" + repo.replace("/", "--"))

    def test_1_download_layout_and_tokens(self):
        before = self.hub.count()
        out = self.generate("org/tiny")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["outputs"][0]["token_ids"], self.local_tokens)
        self.assertIn("Downloading org/tiny", out.stderr)
        commit = self.hub.repos["org/tiny"].branches["main"]
        folder = self.repo_dir("org/tiny")
        with open(os.path.join(folder, "refs", "main")) as f:
            self.assertEqual(f.read().strip(), commit.sha)
        snapshot = os.path.join(folder, "snapshots", commit.sha)
        self.assertEqual(sorted(os.listdir(snapshot)), ["stories260K-f32.gguf"])  # README, .bin, original/ skipped
        link = os.path.join(snapshot, "stories260K-f32.gguf")
        self.assertTrue(os.path.islink(link))
        self.assertFalse(os.path.isabs(os.readlink(link)))
        target = os.path.realpath(link)
        self.assertEqual(os.path.dirname(target), os.path.realpath(os.path.join(folder, "blobs")))
        self.assertEqual(os.path.basename(target), hashlib.sha256(hs.read(GGUF)).hexdigest())  # the LFS ETag
        self.assertEqual(hs.read(target), hs.read(GGUF))
        self.assertEqual(os.listdir(os.path.join(folder, "blobs")), [os.path.basename(target)])  # no temp files
        # The weights came from the "CDN" (another origin), through the redirect.
        paths = [p for _, p, _ in self.hub.since(before)]
        self.assertIn("/cdn/" + os.path.basename(target), paths)
        self.assertFalse(any("pytorch_model.bin" in p or "README" in p for p in paths))
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return
        self.assertEqual(try_to_load_from_cache("org/tiny", "stories260K-f32.gguf", cache_dir=self.cache), link)

    def test_2_cache_reuse_online_and_offline(self):
        self.generate_ok("org/tiny")
        before = self.hub.count()
        self.assertEqual(self.generate_ok("org/tiny"), self.local_tokens)
        # Online, the revision is looked up again (it may have moved); nothing is downloaded.
        self.assertEqual([p for _, p, _ in self.hub.since(before)], ["/api/models/org/tiny/revision/main"])
        before = self.hub.count()
        self.assertEqual(self.generate_ok("org/tiny", offline=True), self.local_tokens)
        sha = self.hub.repos["org/tiny"].branches["main"].sha
        self.assertEqual(self.generate_ok("org/tiny", "--revision", sha, offline=True), self.local_tokens)
        self.assertEqual(self.hub.count(), before)
        # The Hub down: the cache serves, with a note.
        dead = f"http://127.0.0.1:{free_port()}"
        out = self.generate("org/tiny", endpoint=dead)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("using the cached snapshot", out.stderr)

    def test_3_offline_uncached_name(self):
        before = self.hub.count()
        err = self.fails("org/never-downloaded", offline=True)
        self.assertIn("HF_HUB_OFFLINE", err)
        self.assertIn(self.cache, err)
        self.assertEqual(self.hub.count(), before)

    def test_4_missing_gated_private(self):
        self.assertIn("no such model on the Hugging Face Hub", self.fails("org/missing"))
        err = self.fails("org/gated")
        self.assertIn("gated", err)
        self.assertIn("token", err)
        err = self.fails("org/private")
        self.assertIn("401", err)
        self.assertIn("HF_TOKEN", err)
        before = self.hub.count()
        self.assertEqual(self.generate_ok("org/private", HF_TOKEN=TOKEN), self.local_tokens)
        reqs = self.hub.since(before)
        self.assertTrue(all(auth == f"Bearer {TOKEN}" for _, p, auth in reqs if not p.startswith("/cdn/")), reqs)
        self.assertTrue(all(auth is None for _, p, auth in reqs if p.startswith("/cdn/")), reqs)  # not to another origin
        self.assertIn("no revision 'nope'", self.fails("org/tiny", "--revision", "nope"))
        self.assertIn("not a local path", self.fails("org/tiny", endpoint=f"http://127.0.0.1:{free_port()}",
                                                      home=tempfile.mkdtemp(prefix="tessera-hf-empty-")))

    def test_5_revision(self):
        v1 = self.hub.repos["org/tiny"].branches["v1"].sha
        self.assertEqual(self.generate_ok("org/tiny", "--revision", "v1"), self.local_tokens)
        with open(os.path.join(self.repo_dir("org/tiny"), "refs", "v1")) as f:
            self.assertEqual(f.read().strip(), v1)
        self.assertTrue(os.path.exists(os.path.join(self.repo_dir("org/tiny"), "snapshots", v1, "stories260K-f32.gguf")))

    def test_6_safetensors_folder_and_tokenizer_name(self):
        ids = ["--prompt-token-ids", "1,400,30,7"]
        local = self.generate_ok(HF_DIR, *ids)
        self.assertEqual(self.generate_ok("org/tiny-st", *ids), local)
        sha = self.hub.repos["org/tiny-st"].branches["main"].sha
        snapshot = os.path.join(self.repo_dir("org/tiny-st"), "snapshots", sha)
        self.assertEqual(sorted(os.listdir(snapshot)), ["config.json", "model.safetensors"])
        # --tokenizer by name: the GGUF repo's tokenizer (its only one) tokenizes the text prompt.
        self.generate_ok("org/tiny")
        out = self.generate("org/tiny-st", "--tokenizer", "org/tiny")
        self.assertEqual(out.returncode, 0, out.stderr)
        local_text = self.generate_ok(HF_DIR, "--tokenizer", GGUF)
        self.assertEqual(json.loads(out.stdout)["outputs"][0]["token_ids"], local_text)

    def test_7_several_gguf_files(self):
        self.assertIn("org/multi/FILE.gguf", self.fails("org/multi"))
        self.assertEqual(self.generate_ok("org/multi/b.gguf"), self.local_tokens)
        sha = self.hub.repos["org/multi"].branches["main"].sha
        self.assertEqual(os.listdir(os.path.join(self.repo_dir("org/multi"), "snapshots", sha)), ["b.gguf"])

    def test_8_download_cut_short_leaves_no_file(self):
        self.fails("org/broken")
        folder = self.repo_dir("org/broken")
        snapshots = os.path.join(folder, "snapshots")
        self.assertEqual([f for _, _, files in os.walk(snapshots) for f in files], [])
        self.assertEqual(os.listdir(os.path.join(folder, "blobs")), [])
        self.assertFalse(os.path.exists(os.path.join(folder, "refs", "main")))

    def test_9_serve_by_name(self):
        self.generate_ok("org/tiny")
        saved = dict(os.environ)
        os.environ.update(self.env(offline=True))
        try:
            server = sf.Server(self.binary, "org/tiny", ["--device", "cpu", "--max-model-len", "256"], name="hf_hub")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            status, body, _ = server.json_request("GET", "/v1/models")
            self.assertEqual(status, 200)
            self.assertEqual(body["data"][0]["root"], "org/tiny")
            status, body, raw = server.json_request("POST", "/v1/completions", {
                "model": sf.SERVED_MODEL_NAME, "prompt": PROMPT, "max_tokens": 4, "temperature": 0})
            self.assertEqual(status, 200, raw)
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertEqual(body["choices"][0]["text"], self.local_text)

    def test_10_https(self):
        """The same over TLS: a self-signed certificate for 127.0.0.1 and localhost, trusted
        through SSL_CERT_FILE (OpenSSL's default verify paths), refused without it."""
        if shutil.which("openssl") is None:
            self.skipTest("no openssl command to make a certificate")
        d = tempfile.mkdtemp(prefix="tessera-hf-tls-")
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        hub = hs.HubStandIn({"org/tiny": hs.Repo({"main": {"stories260K-f32.gguf": hs.read(GGUF)}})}, tls=tls).start()
        try:
            home = os.path.join(d, "home")
            err = self.fails("org/tiny", endpoint=hub.endpoint, home=home)
            self.assertIn("certificate verify failed", err)
            self.assertEqual(self.generate_ok("org/tiny", endpoint=hub.endpoint, home=home, SSL_CERT_FILE=cert),
                             self.local_tokens)
            self.assertIn("/cdn/" + hashlib.sha256(hs.read(GGUF)).hexdigest(), [p for _, p, _ in hub.since(0)])
        finally:
            hub.stop()
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sf.run_tests()
