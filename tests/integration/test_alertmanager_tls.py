#!/usr/bin/python3
"""Alertmanager push over https, against Debian's prometheus-alertmanager
started with a --web.config.file that requires TLS, a client certificate
signed by the test CA and basic auth (certificates made here by
/usr/bin/openssl):

- with the CA, the client certificate and the password file, the alert
  ckptmon raises (CheckpointTierDown on a missing tier, for: 0s) reaches
  Alertmanager, read back over https;
- a CA that did not sign Alertmanager's certificate, and a wrong password,
  are counted push failures (ckptmon_alertmanager_post_errors_total) with
  the reason in the log ("certificate verify failed", "HTTP 401"); the daemon
  keeps serving while they fail, and a bad certificate never hangs a push
  (each ends within alerting.timeout).
"""

import base64
import json
import os
import ssl
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
OPENSSL = "/usr/bin/openssl"
USER = "ckptmon"
# crypt_blowfish's reference vector: bcrypt("U*U") at cost 05.
PASSWORD = "U*U"
HASH = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"


class Pki:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""

    def __init__(self, directory, name):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.ca, self.ca_key = self.path(f"{name}-ca.crt"), self.path(f"{name}-ca.key")
        self.req(["-x509", "-keyout", self.ca_key, "-out", self.ca, "-subj", f"/CN={name} CA"])
        self.server, self.server_key = self.issue("server", "subjectAltName=IP:127.0.0.1\n"
                                                  "extendedKeyUsage=serverAuth\n")
        self.client, self.client_key = self.issue("client", "extendedKeyUsage=clientAuth\n")

    def path(self, name):
        return os.path.join(self.dir, name)

    def req(self, args):
        harness.run([OPENSSL, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-nodes", "-days", "2", *args])

    def issue(self, who, ext):
        key, csr, crt = self.path(who + ".key"), self.path(who + ".csr"), self.path(who + ".crt")
        extfile = self.path(who + ".ext")
        with open(extfile, "w") as f:
            f.write(ext)
        self.req(["-keyout", key, "-out", csr, "-subj", f"/CN={who}"])
        harness.run([OPENSSL, "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
                     "-CAcreateserial", "-days", "2", "-out", crt, "-extfile", extfile])
        return crt, key


class AlertmanagerTls(unittest.TestCase):
    def setUp(self):
        harness.require_binary()
        harness.require_executable(ALERTMANAGER, "prometheus-alertmanager")
        harness.require_executable(OPENSSL, "openssl")
        self.ws = harness.Workspace()
        self.addCleanup(self.ws.close)
        self.pki = Pki(self.ws.mkdir("pki"), "good")
        web = self.ws.write("am/web.yml", (
            "tls_server_config:\n"
            f"  cert_file: {self.pki.server}\n  key_file: {self.pki.server_key}\n"
            "  client_auth_type: RequireAndVerifyClientCert\n"
            f"  client_ca_file: {self.pki.ca}\n"
            f"basic_auth_users:\n  {USER}: '{HASH}'\n"))
        cfg = self.ws.write("am/am.yml", "route:\n  receiver: blackhole\n"
                                         "receivers:\n  - name: blackhole\n")
        self.am_port = harness.free_port()
        self.am = self.ws.start(harness.Process([
            ALERTMANAGER, f"--config.file={cfg}", f"--storage.path={self.ws.mkdir('am', 'data')}",
            f"--web.listen-address=127.0.0.1:{self.am_port}", f"--web.config.file={web}",
            "--cluster.listen-address=", "--log.level=warn"]))
        self.password_file = self.ws.write("secrets/password", PASSWORD + "\n")
        harness.wait_for(lambda: self.am_alerts() is not None, what="Alertmanager over https")

    def am_alerts(self):
        """Alertmanager's alerts, over https with the right client credentials."""
        ctx = ssl.create_default_context(cafile=self.pki.ca)
        ctx.load_cert_chain(self.pki.client, self.pki.client_key)
        req = urllib.request.Request(
            f"https://127.0.0.1:{self.am_port}/api/v2/alerts",
            headers={"Authorization": "Basic " +
                     base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=3) as r:
                return json.load(r)
        except OSError:
            return None

    def ckptmon(self, ca, password_file, client_cert=True):
        tls = f"ca_file: {ca}"
        if client_cert:
            tls += f", cert_file: {self.pki.client}, key_file: {self.pki.client_key}"
        text = harness.config_yaml([harness.tier_yaml("gone", self.ws.path("missing"))]) + (
            "alerting:\n"
            f"  alertmanager_url: https://127.0.0.1:{self.am_port}\n"
            f"  tls_config: {{{tls}}}\n"
            f"  basic_auth: {{username: {USER}, password_file: {password_file}}}\n"
            "  resend_interval: 1s\n  timeout: 2s\n"
            "  rules:\n    CheckpointTierDown: {for: 0s}\n")
        ck = self.ws.ckptmon(text, name=f"ck-{len(os.listdir(self.ws.dir))}.yml")
        ck.wait_ready()
        return ck

    def tier_down_in_alertmanager(self):
        return [a for a in self.am_alerts() or []
                if a["labels"].get("alertname") == "CheckpointTierDown"
                and a["labels"].get("tier") == "gone"]

    def test_tls_client_certificate_and_basic_auth_deliver(self):
        ck = self.ckptmon(self.pki.ca, self.password_file)
        got = harness.wait_for(self.tier_down_in_alertmanager, what="the alert in Alertmanager")
        self.assertEqual(got[0]["labels"]["severity"], "critical")
        # The push figures are rendered once per rules cycle, after the POST.
        m = harness.wait_for(
            lambda: (lambda m: m if (m.get("ckptmon_alertmanager_alerts_sent_total") or 0) >= 1
                     else None)(ck.scrape()), what="alerts_sent_total")
        self.assertEqual(m.get("ckptmon_alertmanager_post_errors_total"), 0)
        self.assertIsNotNone(m.get("ckptmon_alertmanager_last_success_timestamp_seconds"))

    def wait_failures(self, ck, n):
        return harness.wait_for(
            lambda: (lambda v: v if v is not None and v >= n else None)(
                ck.scrape().get("ckptmon_alertmanager_post_errors_total")),
            what=f"{n} failed pushes")

    def test_untrusted_certificate_is_a_counted_failure_not_a_hang(self):
        other = Pki(self.ws.mkdir("other"), "other")
        ck = self.ckptmon(other.ca, self.password_file)
        self.wait_failures(ck, 2)  # failed, then failed again at the next cycle: no hang
        ck.wait_line(r'msg="alertmanager push failed".*TLS handshake with [^:]+:[0-9]+: certificate verify failed')
        m = ck.scrape()
        self.assertEqual(m.get("ckptmon_alertmanager_alerts_sent_total"), 0)
        self.assertIsNone(m.get("ckptmon_alertmanager_last_success_timestamp_seconds"))
        self.assertEqual(self.tier_down_in_alertmanager(), [])

    def test_wrong_password_is_a_counted_failure(self):
        bad = self.ws.write("secrets/bad", "not-the-password\n")
        ck = self.ckptmon(self.pki.ca, bad)
        self.wait_failures(ck, 1)
        ck.wait_line(r'msg="alertmanager push failed".*HTTP 401')
        self.assertEqual(self.tier_down_in_alertmanager(), [])

    def test_missing_client_certificate_is_a_counted_failure(self):
        ck = self.ckptmon(self.pki.ca, self.password_file, client_cert=False)
        self.wait_failures(ck, 1)
        ck.wait_line(r'msg="alertmanager push failed"')
        self.assertEqual(self.tier_down_in_alertmanager(), [])

    def test_unreadable_password_file_is_a_counted_failure_with_the_file(self):
        ck = self.ckptmon(self.pki.ca, self.ws.path("secrets", "absent"))
        self.wait_failures(ck, 1)
        ck.wait_line(r"basic_auth.password_file: cannot read .*absent: No such file")


if __name__ == "__main__":
    harness.main()
