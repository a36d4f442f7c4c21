#!/usr/bin/python3
"""--web.config.file (exporter-toolkit format): HTTPS with a certificate made
here by /usr/bin/openssl, basic auth against bcrypt hashes on every path, a
clean `promtool check metrics` on the HTTPS scrape, and reloads that pick up
rotated certificates and new passwords but refuse a broken file and keep
serving with the old settings.

The bcrypt hashes come from Python's crypt module (libxcrypt, like ckptmon)
when it exists; without it (Python 3.13 removed it) the crypt_blowfish test
vector for "U*U" stands in and the cost-10 timing is skipped."""

import base64
import http.client
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import time
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

OPENSSL = "/usr/bin/openssl"
PROMTOOL = "/usr/bin/promtool"
# crypt_blowfish's reference vector: bcrypt("U*U") at cost 05.
VECTOR_PASSWORD = "U*U"
VECTOR_HASH = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"


def bcrypt_hash(password, cost):
    """A bcrypt hash from Python's crypt module, or None without it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
        except ImportError:
            return None
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2 ** cost))
    return h if h and h.startswith("$2") else None


def make_cert(directory, name, cn="localhost"):
    """A self-signed certificate for localhost and 127.0.0.1, and its key."""
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    harness.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=" + cn,
                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
    return cert, key


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class WebConfig(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(OPENSSL, "openssl")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        tier = self.ws.mkdir("tier")
        self.cfg = self.ws.write("ckptmon.yml", harness.config_yaml(
            [harness.tier_yaml("a", tier)], state_dir=self.ws.mkdir("state")))
        # Certificates in a subdirectory, named relative to web.yml.
        self.certs = self.ws.mkdir("certs")
        self.cert, self.key = make_cert(self.certs, "server", cn="ckptmon-first")
        self.password = "correct horse battery staple"
        self.hash = bcrypt_hash(self.password, 10)
        if self.hash is None:
            self.password, self.hash = VECTOR_PASSWORD, VECTOR_HASH
        self.web = self.ws.path("web.yml")
        self.write_web(self.web_yaml(self.hash))

    def web_yaml(self, hash_, cert="certs/server.crt", key="certs/server.key"):
        return (f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                f"basic_auth_users:\n  prometheus: '{hash_}'\n")

    def write_web(self, text):
        with open(self.web, "w") as f:
            f.write(text)

    def start(self):
        p = harness.Process([harness.BIN, "serve", "--config.file", self.cfg,
                             "--web.listen-address", "127.0.0.1:0", "--web.config.file", self.web])
        self.ws.on_close(p.stop)
        p.port = int(p.wait_line(r"msg=listening .*\bport=(\d+)").group(1))
        self.proc = p
        return p

    def context(self, cafile=None):
        return ssl.create_default_context(cafile=cafile or self.cert)

    def https(self, path, auth=None, method="GET", body=None, cafile=None, conn=None):
        own = conn is None
        if own:
            conn = http.client.HTTPSConnection("127.0.0.1", self.proc.port,
                                               context=self.context(cafile), timeout=10)
        try:
            headers = {"Authorization": auth} if auth else {}
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            return harness.Reply(r.status, dict(r.getheaders()), r.read(), 0)
        finally:
            if own:
                conn.close()

    def scrape(self):
        r = self.https("/metrics", auth=basic("prometheus", self.password))
        self.assertEqual(r.status, 200, r.text())
        return harness.Metrics(r.text())

    def wait_ready(self):
        harness.wait_for(
            lambda: self.https("/-/ready", auth=basic("prometheus", self.password)).status == 200,
            what="/-/ready over HTTPS")

    def test_https_scrape_with_auth_is_clean_for_promtool(self):
        self.start()
        self.wait_ready()
        r = self.https("/metrics", auth=basic("prometheus", self.password))
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        m = harness.Metrics(r.text())
        self.assertEqual(m.get("ckpt_tier_up", tier="a"), 1.0)
        self.assertEqual(m.get("ckptmon_http_auth_failures_total", reason="missing"), 0.0)
        self.assertEqual(m.get("ckptmon_http_auth_failures_total", reason="invalid"), 0.0)
        self.assertEqual(m.get("ckptmon_http_tls_handshake_failures_total"), 0.0)
        if not os.access(PROMTOOL, os.X_OK):
            harness.skip_peer(f"{PROMTOOL} is missing (Debian package prometheus)")
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=r.body, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertEqual(p.stdout.decode().strip() + p.stderr.decode().strip(), "")

    def test_plain_http_and_untrusted_clients_fail(self):
        self.start()
        self.wait_ready()
        # Plain HTTP to the TLS port: a plain 400 that says why.
        r = harness.http_request(self.proc.port, "/metrics")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.text(), "Client sent an HTTP request to an HTTPS server.\n")
        # A client that does not trust the certificate refuses it.
        other_cert, _ = make_cert(self.ws.mkdir("other"), "other")
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.https("/-/healthy", auth=basic("prometheus", self.password), cafile=other_cert)
        # The server sees the client's alert on its own time: wait for the count.
        harness.wait_for(
            lambda: self.scrape().get("ckptmon_http_tls_handshake_failures_total") == 2.0,
            what="two failed handshakes to be counted")

    def test_every_path_needs_the_right_password(self):
        self.start()
        self.wait_ready()
        missing = invalid = 0
        for path in ("/metrics", "/-/healthy", "/-/ready", "/", "/api/v1/tiers", "/no-such-page"):
            r = self.https(path)
            missing += 1
            self.assertEqual(r.status, 401, path)
            self.assertEqual(r.headers.get("WWW-Authenticate"), 'Basic realm="ckptmon"', path)
            r = self.https(path, auth=basic("prometheus", "wrong"))
            invalid += 1
            self.assertEqual(r.status, 401, path)
            r = self.https(path, auth=basic("grafana", self.password))
            invalid += 1
            self.assertEqual(r.status, 401, path)
        r = self.https("/-/reload", method="POST")
        missing += 1
        self.assertEqual(r.status, 401)
        r = self.https("/-/healthy", auth=basic("prometheus", self.password))
        self.assertEqual((r.status, r.text()), (200, "ckptmon is Healthy.\n"))
        self.assertEqual(self.https("/no-such-page", auth=basic("prometheus", self.password)).status,
                         404)
        m = self.scrape()
        self.assertEqual(m.get("ckptmon_http_auth_failures_total", reason="missing"), missing)
        self.assertEqual(m.get("ckptmon_http_auth_failures_total", reason="invalid"), invalid)
        self.assertEqual(m.get("ckptmon_http_requests_total", handler="/metrics", code="401"), 3.0)
        # The password is never written to the log.
        self.assertNotIn(self.password, self.proc.output())

    def test_reload_refuses_a_broken_web_config_and_picks_up_rotations(self):
        self.start()
        self.wait_ready()
        # Broken: a password where the hash belongs.
        self.write_web(f"basic_auth_users:\n  prometheus: {self.password}\n")
        expected = (f"{self.web}:2:15: basic_auth_users.prometheus: expected a bcrypt hash ($2y$, "
                    "$2b$ or $2a$, a cost from 04 to 31, then 53 characters of salt and hash); "
                    "the value is not shown")
        r = self.https("/-/reload", method="POST", auth=basic("prometheus", self.password))
        self.assertEqual((r.status, r.text()), (500, expected + "\n"))
        self.proc.proc.send_signal(signal.SIGHUP)
        self.proc.wait_line(r"SIGHUP received")
        harness.wait_for(lambda: len(re.findall(re.escape(expected.replace('"', '\\"')),
                                                self.proc.output())) >= 2,
                         what="the SIGHUP reload to be refused")
        # Still HTTPS with the old certificate and the old password.
        m = self.scrape()
        self.assertEqual(m.get("ckptmon_config_last_reload_successful"), 0.0)
        self.assertEqual(m.get("ckpt_tier_up", tier="a"), 1.0)
        self.assertNotIn(self.password, self.proc.output())

        # A certificate that does not load is refused too.
        self.write_web(self.web_yaml(self.hash, key="certs/missing.key"))
        r = self.https("/-/reload", method="POST", auth=basic("prometheus", self.password))
        self.assertEqual(r.status, 500)
        self.assertEqual(r.text(), f"{self.web}:3:13: tls_server_config.key_file: cannot open "
                                   f"{self.certs}/missing.key: No such file or directory\n")

        # Rotation: a new certificate over the old files and a new password.
        old_cert = self.ws.path("old.crt")
        os.rename(self.cert, old_cert)
        make_cert(self.certs, "server", cn="ckptmon-rotated")
        new_password = "rotated " + self.password
        new_hash = bcrypt_hash(new_password, 5)
        if new_hash is None:
            new_password, new_hash = "U*U*", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK"
        self.write_web(self.web_yaml(new_hash))
        r = self.https("/-/reload", method="POST", auth=basic("prometheus", self.password),
                       cafile=old_cert)
        self.assertEqual((r.status, r.text()), (200, "configuration reloaded\n"))
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.https("/-/healthy", auth=basic("prometheus", new_password), cafile=old_cert)
        conn = http.client.HTTPSConnection("127.0.0.1", self.proc.port,
                                           context=self.context(self.cert), timeout=10)
        try:
            r = self.https("/-/healthy", auth=basic("prometheus", new_password), conn=conn)
            self.assertEqual(r.status, 200)
            self.assertEqual(dict(x[0] for x in conn.sock.getpeercert()["subject"])["commonName"],
                             "ckptmon-rotated")
        finally:
            conn.close()
        self.assertEqual(self.https("/-/healthy", auth=basic("prometheus", self.password)).status,
                         401)
        m = harness.Metrics(self.https("/metrics", auth=basic("prometheus", new_password)).text())
        self.assertEqual(m.get("ckptmon_config_last_reload_successful"), 1.0)

    def test_serve_refuses_to_start_with_a_bad_web_config(self):
        self.write_web(self.web_yaml(self.hash, cert="certs/nope.crt"))
        p = harness.Process([harness.BIN, "serve", "--config.file", self.cfg,
                             "--web.listen-address", "127.0.0.1:0", "--web.config.file", self.web])
        self.ws.on_close(p.stop)
        self.assertEqual(p.wait(timeout=30), 1)
        err = "\n".join(p.lines["stderr"])
        self.assertIn("ckptmon: cannot start:\n"
                      f"{self.web}:2:14: tls_server_config.cert_file: cannot open "
                      f"{self.certs}/nope.crt: No such file or directory\n", err + "\n")
        self.assertNotIn("msg=listening", err)

    def test_latency_of_the_first_bcrypt_check_and_of_cached_ones(self):
        if self.hash == VECTOR_HASH:
            self.skipTest("no crypt module to make a cost-10 hash; timing skipped")
        self.start()
        # One keep-alive connection, so the TLS handshake is outside the timings.
        conn = http.client.HTTPSConnection("127.0.0.1", self.proc.port, context=self.context(),
                                           timeout=10)
        self.addCleanup(conn.close)

        def timed(auth):
            t = time.perf_counter()
            r = self.https("/-/healthy", auth=auth, conn=conn)
            return r.status, time.perf_counter() - t

        status, first = timed(basic("prometheus", self.password))
        self.assertEqual(status, 200)
        cached = []
        for _ in range(50):
            status, s = timed(basic("prometheus", self.password))
            self.assertEqual(status, 200)
            cached.append(s)
        wrong = []
        for i in range(5):
            status, s = timed(basic("prometheus", f"wrong {i}"))
            self.assertEqual(status, 401)
            wrong.append(s)
        print(f"\nbcrypt cost 10, HTTPS keep-alive /-/healthy: first check {first * 1e3:.1f} ms, "
              f"cached median {statistics.median(cached) * 1e3:.2f} ms "
              f"(max {max(cached) * 1e3:.2f} ms), wrong password median "
              f"{statistics.median(wrong) * 1e3:.1f} ms")


if __name__ == "__main__":
    harness.main()
