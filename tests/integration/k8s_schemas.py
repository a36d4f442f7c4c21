"""JSON schemas for the Kubernetes objects in deploy/kubernetes/, written from
the Kubernetes 1.28 API reference (apps/v1, core/v1) and the Prometheus
Operator's monitoring.coreos.com/v1 CRDs, for the fields the manifests use.
Types and enums follow the API; every object is closed (additionalProperties:
false), so a misspelt or misplaced field fails instead of being silently
dropped by the API server. A field the manifests start using needs adding
here, from the reference.
"""


def obj(props, required=()):
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


STR = {"type": "string"}
BOOL = {"type": "boolean"}
INT = {"type": "integer"}
NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
LABELS = {"type": "object", "additionalProperties": STR}
QUANTITY = {"oneOf": [{"type": "string", "pattern": r"^[0-9.]+(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"},
                      {"type": "number"}]}
INT_OR_STR = {"oneOf": [INT, STR]}
DURATION = {"type": "string", "pattern": r"^(\d+(ms|s|m|h|d|w|y))+$"}

METADATA = obj({"name": NAME, "namespace": NAME, "labels": LABELS, "annotations": LABELS},
               required=["name"])
TEMPLATE_METADATA = obj({"labels": LABELS, "annotations": LABELS})
SELECTOR = obj({"matchLabels": LABELS}, required=["matchLabels"])

CAPABILITIES = obj({"add": {"type": "array", "items": STR},
                    "drop": {"type": "array", "items": STR}})
SECCOMP = obj({"type": {"enum": ["RuntimeDefault", "Localhost", "Unconfined"]},
               "localhostProfile": STR}, required=["type"])
CONTAINER_SECURITY = obj({
    "allowPrivilegeEscalation": BOOL, "privileged": BOOL, "readOnlyRootFilesystem": BOOL,
    "runAsNonRoot": BOOL, "runAsUser": INT, "runAsGroup": INT, "capabilities": CAPABILITIES,
    "seccompProfile": SECCOMP})
POD_SECURITY = obj({"runAsNonRoot": BOOL, "runAsUser": INT, "runAsGroup": INT, "fsGroup": INT,
                    "supplementalGroups": {"type": "array", "items": INT},
                    "seccompProfile": SECCOMP})
PROBE = obj({
    "httpGet": obj({"path": STR, "port": INT_OR_STR, "scheme": {"enum": ["HTTP", "HTTPS"]}},
                   required=["port"]),
    "initialDelaySeconds": INT, "periodSeconds": INT, "timeoutSeconds": INT,
    "failureThreshold": INT, "successThreshold": INT})
RESOURCES = obj({"requests": obj({"cpu": QUANTITY, "memory": QUANTITY}),
                 "limits": obj({"cpu": QUANTITY, "memory": QUANTITY})})
ENV = obj({"name": STR, "value": STR,
           "valueFrom": obj({"fieldRef": obj({"fieldPath": STR, "apiVersion": STR},
                                             required=["fieldPath"])})},
          required=["name"])
CONTAINER = obj({
    "name": NAME, "image": STR, "command": {"type": "array", "items": STR},
    "args": {"type": "array", "items": STR}, "env": {"type": "array", "items": ENV},
    "ports": {"type": "array", "items": obj({
        "name": {"type": "string", "maxLength": 15}, "containerPort": INT,
        "protocol": {"enum": ["TCP", "UDP", "SCTP"]}}, required=["containerPort"])},
    "livenessProbe": PROBE, "readinessProbe": PROBE, "startupProbe": PROBE,
    "resources": RESOURCES, "securityContext": CONTAINER_SECURITY,
    "volumeMounts": {"type": "array", "items": obj({
        "name": STR, "mountPath": STR, "readOnly": BOOL, "subPath": STR},
        required=["name", "mountPath"])}},
    required=["name", "image"])
VOLUME = obj({
    "name": NAME,
    "configMap": obj({"name": NAME, "defaultMode": INT}, required=["name"]),
    "hostPath": obj({"path": STR, "type": {"enum": [
        "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
        "BlockDevice"]}}, required=["path"]),
    "emptyDir": obj({"medium": STR, "sizeLimit": QUANTITY}),
    "persistentVolumeClaim": obj({"claimName": STR, "readOnly": BOOL}, required=["claimName"])},
    required=["name"])
POD_SPEC = obj({
    "automountServiceAccountToken": BOOL, "enableServiceLinks": BOOL, "hostNetwork": BOOL,
    "hostPID": BOOL, "hostIPC": BOOL, "serviceAccountName": STR,
    "securityContext": POD_SECURITY,
    "containers": {"type": "array", "minItems": 1, "items": CONTAINER},
    "initContainers": {"type": "array", "items": CONTAINER},
    "volumes": {"type": "array", "items": VOLUME},
    "nodeSelector": LABELS, "priorityClassName": STR,
    "tolerations": {"type": "array", "items": obj({
        "key": STR, "operator": {"enum": ["Exists", "Equal"]}, "value": STR,
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]}})}},
    required=["containers"])
POD_TEMPLATE = obj({"metadata": TEMPLATE_METADATA, "spec": POD_SPEC}, required=["spec"])


def top(api_version, kind, spec=None, extra=None, spec_required=True):
    props = {"apiVersion": {"const": api_version}, "kind": {"const": kind}, "metadata": METADATA}
    req = ["apiVersion", "kind", "metadata"]
    if spec is not None:
        props["spec"] = spec
        if spec_required:
            req.append("spec")
    props.update(extra or {})
    return obj(props, required=req)


SCHEMAS = {
    ("v1", "ConfigMap"): top("v1", "ConfigMap", extra={"data": LABELS}),
    ("v1", "Service"): top("v1", "Service", obj({
        "clusterIP": STR, "type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]},
        "selector": LABELS,
        "ports": {"type": "array", "minItems": 1, "items": obj({
            "name": STR, "port": INT, "targetPort": INT_OR_STR,
            "protocol": {"enum": ["TCP", "UDP", "SCTP"]}}, required=["port"])}},
        required=["ports"])),
    ("apps/v1", "DaemonSet"): top("apps/v1", "DaemonSet", obj({
        "selector": SELECTOR, "template": POD_TEMPLATE, "minReadySeconds": INT,
        "updateStrategy": obj({"type": {"enum": ["RollingUpdate", "OnDelete"]},
                               "rollingUpdate": obj({"maxUnavailable": INT_OR_STR,
                                                     "maxSurge": INT_OR_STR})})},
        required=["selector", "template"])),
    ("apps/v1", "StatefulSet"): top("apps/v1", "StatefulSet", obj({
        "serviceName": STR, "replicas": INT, "selector": SELECTOR, "template": POD_TEMPLATE,
        "podManagementPolicy": {"enum": ["OrderedReady", "Parallel"]},
        "volumeClaimTemplates": {"type": "array", "items": obj({
            "metadata": obj({"name": NAME, "labels": LABELS}, required=["name"]),
            "spec": obj({
                "accessModes": {"type": "array", "items": {"enum": [
                    "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]}},
                "storageClassName": STR,
                "resources": obj({"requests": obj({"storage": QUANTITY})})})})}},
        required=["selector", "template", "serviceName"])),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): top(
        "monitoring.coreos.com/v1", "ServiceMonitor", obj({
            "selector": SELECTOR, "jobLabel": STR,
            "namespaceSelector": obj({"matchNames": {"type": "array", "items": STR}}),
            "endpoints": {"type": "array", "minItems": 1, "items": obj({
                "port": STR, "path": STR, "scheme": {"enum": ["http", "https"]},
                "interval": DURATION, "scrapeTimeout": DURATION, "honorLabels": BOOL})}},
            required=["selector", "endpoints"])),
    ("monitoring.coreos.com/v1", "PrometheusRule"): top(
        "monitoring.coreos.com/v1", "PrometheusRule", obj({
            "groups": {"type": "array", "items": obj({
                "name": STR, "interval": DURATION,
                "rules": {"type": "array", "items": {"oneOf": [
                    obj({"record": STR, "expr": STR, "labels": LABELS},
                        required=["record", "expr"]),
                    obj({"alert": STR, "expr": STR, "for": DURATION, "labels": LABELS,
                         "annotations": LABELS}, required=["alert", "expr"]),
                ]}}}, required=["name", "rules"])}}, required=["groups"])),
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"): obj({
        "apiVersion": {"const": "kustomize.config.k8s.io/v1beta1"},
        "kind": {"const": "Kustomization"}, "namespace": NAME,
        "resources": {"type": "array", "items": STR}}, required=["apiVersion", "kind"]),
}
