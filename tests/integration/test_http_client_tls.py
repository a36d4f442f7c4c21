#!/usr/bin/python3
"""ckptmon's one HTTP client against peers behind TLS and credentials.

- `report --prometheus https://...` against Debian's Prometheus serving the
  30 backfilled days of test_report_prometheus.py behind TLS and basic auth
  (its --web.config.file; certificates made here by /usr/bin/openssl): the
  growth and time to full are the values worked out there, within 1 %.
  No CA, another CA, a wrong password: exit 2 naming the reason.
- A bearer token and a tenant header: a gateway in front of that Prometheus
  (as Mimir's and Thanos' gateways stand in front of theirs) lets through
  only requests with `Authorization: Bearer <token>` and `X-Scope-OrgID`,
  and forwards them with its own basic auth. What the gateway saw is
  asserted, and so is the report.
- dcgm over https: the daemon scrapes a dcgm-exporter stand-in over TLS
  with a bearer token file; the GPU is up and reads the value served.
"""

import base64
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_report_prometheus as trp  # noqa: E402
from test_alertmanager_tls import HASH, OPENSSL, PASSWORD, USER, Pki  # noqa: E402

TOKEN = "gateway-token-1"
TENANT = "team-a"


def ckptmon(*args, timeout=120):
    return subprocess.run([harness.BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


class Gateway:
    """An https gateway: requests without the bearer token or the tenant get
    401; the rest go to `upstream` with the gateway's own basic auth."""

    def __init__(self, pki, upstream, upstream_ca):
        self.seen = []
        outer = self
        up_ctx = ssl.create_default_context(cafile=upstream_ca)
        basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                auth = self.headers.get("Authorization")
                tenant = self.headers.get("X-Scope-OrgID")
                outer.seen.append((self.path, auth, tenant))
                if auth != f"Bearer {TOKEN}" or tenant != TENANT:
                    return self.answer(401, "text/plain", b"no or wrong token or tenant\n")
                req = urllib.request.Request(upstream + self.path, headers={"Authorization": basic})
                try:
                    with urllib.request.urlopen(req, context=up_ctx, timeout=60) as r:
                        self.answer(r.status, r.headers.get("Content-Type"), r.read())
                except urllib.error.HTTPError as e:
                    self.answer(e.code, e.headers.get("Content-Type"), e.read())

            def answer(self, status, ctype, body):
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.server, pki.server_key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class PrometheusBehindTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.require_binary()
        harness.require_executable(harness.PROMETHEUS, "prometheus")
        harness.require_executable(trp.PROMTOOL, "prometheus")
        harness.require_executable(OPENSSL, "openssl")
        cls.ws = harness.Workspace()
        try:
            cls.pki = Pki(cls.ws.mkdir("pki"), "good")
            cls.other = Pki(cls.ws.mkdir("other"), "other")
            om = cls.ws.write("ckptmon.om", trp.openmetrics())
            tsdb = cls.ws.mkdir("tsdb")
            harness.run([trp.PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "-q", om,
                         tsdb], timeout=300)
            cfg = cls.ws.write("prometheus.yml", "global:\n  scrape_interval: 1m\n")
            web = cls.ws.write("web.yml", (
                "tls_server_config:\n"
                f"  cert_file: {cls.pki.server}\n  key_file: {cls.pki.server_key}\n"
                f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
            cls.prom = cls.ws.start(harness.Prometheus(
                cfg, tsdb, ["--storage.tsdb.retention.time=3650d", f"--web.config.file={web}"]))
            cls.url = f"https://127.0.0.1:{cls.prom.port}"
            harness.wait_for(cls.prometheus_ready, timeout=120, what="Prometheus ready over https")
            cls.password_file = cls.ws.write("secrets/password", PASSWORD + "\n")
            cls.token_file = cls.ws.write("secrets/token", TOKEN + "\n")
            cls.gateway = Gateway(cls.pki, cls.url, cls.pki.ca)
            cls.ws.on_close(cls.gateway.close)
        except BaseException:
            cls.ws.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    @classmethod
    def prometheus_ready(cls):
        ctx = ssl.create_default_context(cafile=cls.pki.ca)
        req = urllib.request.Request(cls.url + "/-/ready", headers={
            "Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=3) as r:
                return r.status == 200
        except OSError:
            return False

    def report(self, url, *flags):
        return ckptmon("report", "--prometheus", url, *flags, "--now", str(int(trp.T_END)),
                       "--format", "json", "--tier", "rapid")

    def assert_rapid(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        rapid = next(t for t in doc["tiers"] if t["tier"] == "rapid")
        for key, want in (("growth_bytes_per_day", trp.RAPID_GROWTH),
                          ("time_to_full_seconds", trp.RAPID_TTF)):
            self.assertLessEqual(abs(rapid[key] - want), want * 0.01, f"{key}: {rapid[key]}")
        self.assertEqual(rapid["size_bytes"], 100 * trp.TiB)

    def test_tls_and_basic_auth(self):
        self.assert_rapid(self.report(
            self.url, "--prometheus.ca-file", self.pki.ca,
            "--prometheus.basic-auth-user", USER,
            "--prometheus.basic-auth-password-file", self.password_file))

    def test_bearer_token_and_tenant_through_a_gateway(self):
        before = len(self.gateway.seen)
        self.assert_rapid(self.report(
            self.gateway.url, "--prometheus.ca-file", self.pki.ca,
            "--prometheus.bearer-token-file", self.token_file,
            "--prometheus.header", f"X-Scope-OrgID={TENANT}"))
        seen = self.gateway.seen[before:]
        self.assertGreater(len(seen), 3)  # rules, then one query per series set
        self.assertEqual({(a, t) for _, a, t in seen}, {(f"Bearer {TOKEN}", TENANT)})
        # Without the tenant the gateway refuses, and the report says so.
        r = self.report(self.gateway.url, "--prometheus.ca-file", self.pki.ca,
                        "--prometheus.bearer-token-file", self.token_file)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--prometheus {self.gateway.url}: ", r.stderr)
        self.assertIn("answered 401", r.stderr)

    def test_failures_exit_2_naming_the_reason(self):
        auth = ["--prometheus.basic-auth-user", USER,
                "--prometheus.basic-auth-password-file", self.password_file]
        for name, flags, want in (
                ("no CA (the system's store does not know ours)", auth,
                 "certificate verify failed"),
                ("another CA", ["--prometheus.ca-file", self.other.ca, *auth],
                 "certificate verify failed"),
                ("a wrong name", ["--prometheus.ca-file", self.pki.ca,
                                  "--prometheus.server-name", "prometheus.example", *auth],
                 "certificate verify failed"),
                ("no credentials", ["--prometheus.ca-file", self.pki.ca], "answered 401"),
                ("a CA file that is missing", ["--prometheus.ca-file", self.ws.path("nope.pem")],
                 "tls_config.ca_file " + self.ws.path("nope.pem")),
                ("a relative path", ["--prometheus.ca-file", "ca.pem"],
                 "--prometheus.ca-file: expected an absolute path"),
                ("a header that is not NAME=VALUE", ["--prometheus.header", "X-Scope-OrgID"],
                 "--prometheus.header: expected NAME=VALUE"),
                ("the client's own header", ["--prometheus.header", "Authorization=Bearer x"],
                 "is the client's own header")):
            with self.subTest(name):
                r = self.report(self.url, *flags)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertIn(want, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        # With --prometheus.insecure-skip-verify another CA's certificate passes.
        self.assert_rapid(self.report(self.url, "--prometheus.ca-file", self.other.ca,
                                      "--prometheus.insecure-skip-verify", *auth))


class DcgmOverHttps(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(OPENSSL, "openssl")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        pki = Pki(self.ws.mkdir("pki"), "dcgm")
        self.auths = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.auths.append(self.headers.get("Authorization"))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    body, status = b"token please\n", 401
                else:
                    body, status = (b'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a",'
                                    b'modelName="H100"} 0.625\n'), 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.server, pki.server_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.url = f"https://127.0.0.1:{server.server_address[1]}/metrics"
        self.ca = pki.ca
        self.token_file = self.ws.write("secrets/token", TOKEN + "\n")

    def daemon(self, token_file):
        gpu = (f"gpu:\n  source: dcgm\n  dcgm_url: {self.url}\n  interval: 250ms\n"
               f"  tls_config: {{ca_file: {self.ca}}}\n"
               f"  authorization: {{credentials_file: {token_file}}}\n")
        text, _ = harness.gpu_config(self.ws, gpu)
        ck = self.ws.ckptmon(text, name=f"ck-{len(self.auths)}-{os.path.basename(token_file)}.yml")
        ck.wait_ready()
        return ck

    def test_scrapes_over_tls_with_a_bearer_token(self):
        ck = self.daemon(self.token_file)
        m = harness.wait_for(
            lambda: (lambda m: m if m.get("ckpt_gpu_utilization_ratio", gpu="0") is not None
                     else None)(ck.scrape()), timeout=20, interval=0.1, what="GPU 0 read")
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 1)
        self.assertAlmostEqual(m.get("ckpt_gpu_utilization_ratio", gpu="0"), 0.625, 6)
        self.assertEqual(set(self.auths), {f"Bearer {TOKEN}"})

    def test_a_wrong_token_is_a_down_source_with_the_reason(self):
        wrong = self.ws.write("secrets/wrong", "not-it\n")
        ck = self.daemon(wrong)
        ck.wait_line(r"GPU source down.*answered HTTP 401")
        m = ck.scrape()
        self.assertEqual(m.get("ckptmon_gpu_source_up"), 0)
        self.assertIsNone(m.get("ckpt_gpu_utilization_ratio", gpu="0"))  # unknown, not 0


if __name__ == "__main__":
    harness.main()
