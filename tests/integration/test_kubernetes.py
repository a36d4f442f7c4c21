#!/usr/bin/python3
"""deploy/kubernetes/, checked without a cluster:

- every manifest validates against the JSON schema of its kind and API
  version (tests/integration/k8s_schemas.py, written for the fields used;
  checked with python3-jsonschema). kubectl cannot do this offline: its
  --dry-run=client still asks an API server for the resource mapping
  (docs/operations.md "Kubernetes");
- the pods run non-root with a read-only root file system, no privilege
  escalation, every capability dropped, resource limits, /-/healthy and
  /-/ready probes, and read-only mounts of every tier;
- every configuration in the ConfigMaps passes the real `ckptmon
  check-config`; each workload's --config.file, state_dir and tier paths
  resolve to its mounts; the shard files are <i>/<replicas>;
- deploy/kubernetes/prometheusrule.yaml is what scripts/gen-prometheusrule.py
  makes from deploy/prometheus's rule files.
"""

import copy
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import jsonschema
    import yaml
except ImportError as e:  # Debian packages python3-jsonschema, python3-yaml
    jsonschema = yaml = None
    IMPORT_ERROR = str(e)

K8S = os.path.join(harness.SOURCE_DIR, "deploy", "kubernetes")


def load_all():
    docs = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            for d in yaml.safe_load_all(f):
                if d is not None:
                    docs.append((os.path.basename(path), d))
    return docs


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if yaml is None:
            harness.skip_peer(f"{IMPORT_ERROR} (python3-jsonschema, python3-yaml)")
        import k8s_schemas
        cls.schemas = k8s_schemas.SCHEMAS
        cls.docs = load_all()
        cls.by_kind = {}
        for _, d in cls.docs:
            cls.by_kind.setdefault(d["kind"], []).append(d)

    def validate(self, doc):
        key = (doc.get("apiVersion"), doc.get("kind"))
        self.assertIn(key, self.schemas, f"no schema for {key}")
        jsonschema.Draft7Validator(self.schemas[key]).validate(doc)

    def workloads(self):
        return self.by_kind["DaemonSet"] + self.by_kind["StatefulSet"]

    def test_every_manifest_validates(self):
        kinds = set()
        for name, d in self.docs:
            with self.subTest(file=name, kind=d.get("kind")):
                self.validate(d)
                kinds.add(d["kind"])
        self.assertEqual(kinds, {"Kustomization", "ConfigMap", "DaemonSet", "StatefulSet",
                                 "Service", "ServiceMonitor", "PrometheusRule"})

    def test_schemas_reject_misspelt_and_mistyped_fields(self):
        ds = self.by_kind["DaemonSet"][0]
        bad = copy.deepcopy(ds)
        sc = bad["spec"]["template"]["spec"]["containers"][0]["securityContext"]
        sc["readOnlyRootFileSystem"] = sc.pop("readOnlyRootFilesystem")
        with self.assertRaises(jsonschema.ValidationError):
            self.validate(bad)
        bad = copy.deepcopy(ds)
        bad["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] = "true"
        with self.assertRaises(jsonschema.ValidationError):
            self.validate(bad)
        bad = copy.deepcopy(ds)
        bad["spec"]["template"]["spec"]["volumes"][1]["hostPath"]["type"] = "Dir"
        with self.assertRaises(jsonschema.ValidationError):
            self.validate(bad)

    def test_kustomization_lists_every_file(self):
        k = self.by_kind["Kustomization"][0]
        files = {os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))}
        self.assertEqual(set(k["resources"]), files - {"kustomization.yaml"})

    def test_security_context(self):
        for w in self.workloads():
            pod = w["spec"]["template"]["spec"]
            with self.subTest(workload=w["metadata"]["name"]):
                psc = pod["securityContext"]
                self.assertIs(psc["runAsNonRoot"], True)
                self.assertNotEqual(psc["runAsUser"], 0)
                self.assertNotEqual(psc["runAsGroup"], 0)
                self.assertEqual(psc["seccompProfile"]["type"], "RuntimeDefault")
                for k in ("hostNetwork", "hostPID", "hostIPC"):
                    self.assertFalse(pod.get(k, False), k)
                self.assertIs(pod["automountServiceAccountToken"], False)
                for c in pod["containers"] + pod.get("initContainers", []):
                    sc = c["securityContext"]
                    self.assertIs(sc["readOnlyRootFilesystem"], True)
                    self.assertIs(sc["allowPrivilegeEscalation"], False)
                    self.assertIs(sc.get("privileged", False), False)
                    self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
                    self.assertNotIn("add", sc["capabilities"])
                    for kind in ("requests", "limits"):
                        self.assertEqual(set(c["resources"][kind]), {"cpu", "memory"})

    def test_probes(self):
        for w in self.workloads():
            c = w["spec"]["template"]["spec"]["containers"][0]
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            listen = [a for a in c["args"] if a.startswith("--web.listen-address=")]
            self.assertEqual(listen, [f"--web.listen-address=:{ports['metrics']}"])
            self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/-/healthy")
            self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/-/ready")
            for p in ("livenessProbe", "readinessProbe"):
                self.assertIn(c[p]["httpGet"]["port"], ports)

    def configs_of(self, w):
        """{file name: text} of the ConfigMap mounted at /etc/ckptmon."""
        pod = w["spec"]["template"]["spec"]
        c = pod["containers"][0]
        mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/ckptmon"][0]
        self.assertIs(mount.get("readOnly"), True)
        self.assertNotIn("subPath", mount, "subPath mounts never see ConfigMap updates")
        vol = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
        cm = [m for m in self.by_kind["ConfigMap"]
              if m["metadata"]["name"] == vol["configMap"]["name"]][0]
        return cm["data"]

    def config_files(self, w):
        """The --config.file of each pod of the workload (POD_NAME expanded)."""
        c = w["spec"]["template"]["spec"]["containers"][0]
        arg = [a for a in c["args"] if a.startswith("--config.file=")][0].split("=", 1)[1]
        self.assertTrue(any(a.startswith("--config.watch-interval=") for a in c["args"]))
        if "$(POD_NAME)" not in arg:
            return [arg]
        env = [e for e in c["env"] if e["name"] == "POD_NAME"][0]
        self.assertEqual(env["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
        name = w["metadata"]["name"]
        return [arg.replace("$(POD_NAME)", f"{name}-{i}") for i in range(w["spec"]["replicas"])]

    def test_configs_resolve_to_mounts_and_pass_check_config(self):
        harness.require_binary()
        for w in self.workloads():
            pod = w["spec"]["template"]["spec"]
            mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
            data = self.configs_of(w)
            for path in self.config_files(w):
                with self.subTest(workload=w["metadata"]["name"], config=path):
                    self.assertEqual(os.path.dirname(path), "/etc/ckptmon")
                    text = data[os.path.basename(path)]
                    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
                        f.write(text)
                        f.flush()
                        r = subprocess.run([harness.BIN, "check-config", f.name], text=True,
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                    self.assertEqual(r.returncode, 0, r.stdout)
                    cfg = yaml.safe_load(text)
                    state = mounts[cfg["global"]["state_dir"]]
                    self.assertFalse(state.get("readOnly", False))
                    for t in cfg["tiers"]:
                        self.assertIs(mounts[t["path"]].get("readOnly"), True, t["path"])

    def test_every_host_path_is_read_only_except_state(self):
        for w in self.workloads():
            pod = w["spec"]["template"]["spec"]
            host = {v["name"] for v in pod["volumes"] if "hostPath" in v}
            for m in pod["containers"][0]["volumeMounts"]:
                if m["name"] in host and m["mountPath"] != "/var/lib/ckptmon":
                    self.assertIs(m.get("readOnly"), True, m)

    def test_shards_are_the_pod_ordinals(self):
        sts = self.by_kind["StatefulSet"][0]
        n = sts["spec"]["replicas"]
        data = self.configs_of(sts)
        texts = [data[os.path.basename(p)] for p in self.config_files(sts)]
        for i, text in enumerate(texts):
            shards = [t["shard"] for t in yaml.safe_load(text)["tiers"]]
            self.assertEqual(shards, [f"{i}/{n}"])
            # Nothing else differs between the shard files.
            self.assertEqual(re.sub(r"shard: \d+/\d+", "shard: S", text),
                             re.sub(r"shard: \d+/\d+", "shard: S", texts[0]))

    def test_service_and_servicemonitor_select_the_pods(self):
        svc = self.by_kind["Service"][0]
        self.assertEqual(svc["metadata"]["name"], "ckptmon")  # the rules' job="ckptmon"
        for w in self.workloads():
            labels = w["spec"]["template"]["metadata"]["labels"]
            self.assertTrue(set(svc["spec"]["selector"].items()) <= set(labels.items()))
            self.assertEqual(w["spec"]["selector"]["matchLabels"].items() - labels.items(), set())
        sts = self.by_kind["StatefulSet"][0]
        self.assertEqual(sts["spec"]["serviceName"], svc["metadata"]["name"])
        sm = self.by_kind["ServiceMonitor"][0]
        self.assertTrue(set(sm["spec"]["selector"]["matchLabels"].items())
                        <= set(svc["metadata"]["labels"].items()))
        self.assertEqual({e["port"] for e in sm["spec"]["endpoints"]},
                         {p["name"] for p in svc["spec"]["ports"]})

    def test_prometheusrule_is_generated_from_the_rule_files(self):
        script = os.path.join(harness.SOURCE_DIR, "scripts", "gen-prometheusrule.py")
        r = subprocess.run([sys.executable, script, "--check"], text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, r.stdout)
        # And independently of the script: the same groups as the rule files.
        groups = []
        for f in ("ckptmon-recording-rules.yml", "ckptmon-alerts.yml"):
            with open(os.path.join(harness.SOURCE_DIR, "deploy", "prometheus", f)) as fh:
                groups += yaml.safe_load(fh)["groups"]
        self.assertEqual(self.by_kind["PrometheusRule"][0]["spec"]["groups"], groups)


if __name__ == "__main__":
    harness.main()
