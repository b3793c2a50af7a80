#!/usr/bin/python3
"""Offline checks of the deployment files (no cluster, no container engine needed).

What can be checked without running them: every file parses; the Kubernetes manifests have
the kinds a production deployment needs and agree with each other (selectors, named ports,
probe ports, the HPA target and metric) and with the image (the ports its ENTRYPOINT listens
on, its non-root uid); the drain fits in the termination grace period; every textgen-server
flag any of them passes exists in `textgen-server --help`; the balancers hash on the
x-session-id header; Prometheus scrapes the metrics port; the replicas share one KV cache
directory (a ReadWriteMany claim, a named compose volume).
Exit status 1 with one line per problem.
"""
import argparse
import json
import re
import subprocess
import sys

import yaml


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True, help="textgen-server binary (for --help)")
    p.add_argument("--repo", required=True, help="repository root")
    return p.parse_args()


ARGS = parse_args()
PROBLEMS = []


def check(condition, message):
    if not condition:
        PROBLEMS.append(message)
    return condition


def load_all(path):
    with open(f"{ARGS.repo}/{path}") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def server_flags():
    help_text = subprocess.run([ARGS.server, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+--([a-z0-9_]+) \(", help_text, re.MULTILINE))


def flags_in(args):
    return [a[2:].split("=")[0].replace("-", "_") for a in args if a.startswith("--")]


def duration_seconds(text):
    match = re.fullmatch(r"(\d+)(s|m)", text)
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1) if match else None


def dockerfile_facts():
    text = open(f"{ARGS.repo}/Dockerfile").read()
    entry = re.search(r'^ENTRYPOINT \[(.*?)\]\s*$', text, re.MULTILINE | re.DOTALL).group(1)
    entry_args = json.loads("[" + entry.replace("\\\n", " ") + "]")
    ports = {}
    for flag, port in zip(entry_args, entry_args[1:]):
        if flag in ("--listen", "--http-listen", "--metrics-listen"):
            ports[flag] = int(port.rsplit(":", 1)[1])
    uid = int(re.search(r"useradd .*--uid (\d+)", text).group(1))
    user = re.search(r"^USER (\S+)", text, re.MULTILINE).group(1)
    return entry_args, ports, uid, user


def check_kubernetes(flags, image_ports, image_uid):
    docs = load_all("deploy/k8s/textgen.yaml")
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ("Deployment", "Service", "Ingress", "PodDisruptionBudget",
                 "HorizontalPodAutoscaler"):
        check(kind in by_kind, f"k8s: no {kind}")
    if "Deployment" not in by_kind:
        return
    deployment = by_kind["Deployment"][0]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    check(spec["selector"]["matchLabels"].items() <= labels.items(),
          "k8s: the Deployment's selector does not match its pod labels")
    container = pod["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(ports.get("grpc") == image_ports["--listen"], "k8s: grpc port is not the image's --listen")
    check(ports.get("http") == image_ports["--http-listen"],
          "k8s: http port is not the image's --http-listen")
    check(ports.get("metrics") == image_ports["--metrics-listen"],
          "k8s: metrics port is not the image's --metrics-listen")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = container.get(probe)
        if check(p is not None, f"k8s: no {probe}"):
            check(p.get("grpc", {}).get("port") == ports.get("grpc"),
                  f"k8s: {probe} is not a gRPC probe on the grpc port")
    unknown = [f for f in flags_in(container.get("args", [])) if f not in flags]
    check(not unknown, f"k8s: flags not in textgen-server --help: {unknown}")
    args = container.get("args", [])
    drain = duration_seconds(args[args.index("--drain-timeout") + 1]) \
        if "--drain-timeout" in args else None
    check(drain is not None, "k8s: no --drain-timeout in the container args")
    pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pre_stop_seconds = int(pre_stop[-1]) if pre_stop[:1] == ["sleep"] else 0
    check(pre_stop_seconds > 0, "k8s: no preStop sleep (endpoint removal races the drain)")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(drain is None or grace > pre_stop_seconds + drain,
          f"k8s: terminationGracePeriodSeconds {grace} <= preStop {pre_stop_seconds} s + "
          f"drain {drain} s: running streams would be killed")
    security = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    check(security.get("runAsNonRoot") is True, "k8s: runAsNonRoot is not set")
    check(security.get("runAsUser") == image_uid, "k8s: runAsUser is not the image's uid")
    check(security.get("readOnlyRootFilesystem") is True, "k8s: the root filesystem is writable")
    check(security.get("allowPrivilegeEscalation") is False, "k8s: privilege escalation allowed")
    resources = container.get("resources", {})
    check(resources.get("requests", {}).get("cpu") and resources.get("limits", {}).get("memory"),
          "k8s: no CPU request or memory limit")
    threads = args[args.index("--threads") + 1] if "--threads" in args else None
    check(threads == str(resources.get("requests", {}).get("cpu")),
          "k8s: --threads differs from the CPU request (oversubscribed or idle cores)")

    service = by_kind.get("Service", [{}])[0]
    check(service.get("spec", {}).get("selector", {}).items() <= labels.items(),
          "k8s: the Service selector does not match the pods")
    service_ports = {p["name"]: p for p in service.get("spec", {}).get("ports", [])}
    for name, p in service_ports.items():
        check(p["targetPort"] in ports, f"k8s: Service port {name} targets an unknown port")
    for ingress in by_kind.get("Ingress", []):
        name = ingress["metadata"]["name"]
        annotations = ingress["metadata"].get("annotations", {})
        check("upstream-hash-by" in " ".join(annotations),
              f"k8s: Ingress {name} does not hash (sessions would miss their replica)")
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                check(backend["name"] == service["metadata"]["name"] and
                      backend["port"].get("name") in service_ports,
                      f"k8s: Ingress {name} points at an unknown service port")
    key = load_all("deploy/k8s/ingress-nginx-config.yaml")[0]["data"]["http-snippet"]
    check("$http_x_session_id" in key and "$textgen_session_key" in key,
          "k8s: the ingress-nginx http-snippet does not define $textgen_session_key")
    pdb = by_kind.get("PodDisruptionBudget", [{}])[0]
    check(pdb.get("spec", {}).get("selector", {}).get("matchLabels", {}).items() <= labels.items(),
          "k8s: the PodDisruptionBudget selects no textgen pod")
    check(pdb.get("spec", {}).get("minAvailable", 0) < spec["replicas"],
          "k8s: minAvailable >= replicas: no node could ever be drained")
    hpa = by_kind.get("HorizontalPodAutoscaler", [{}])[0].get("spec", {})
    check(hpa.get("scaleTargetRef", {}).get("name") == deployment["metadata"]["name"],
          "k8s: the HPA scales something else")
    metric = hpa.get("metrics", [{}])[0].get("pods", {}).get("metric", {}).get("name")
    adapter = load_all("deploy/k8s/prometheus-adapter.yaml")[0]["rules"]["custom"]
    check(any(r["name"]["as"] == metric for r in adapter),
          f"k8s: prometheus-adapter serves no {metric}")
    metrics_source = open(f"{ARGS.repo}/server/observability/metrics.cc").read()
    check(f'"{metric}"' in metrics_source, f"k8s: the server exports no metric {metric}")
    # The KV cache directory: on a volume every replica mounts read-write (a session moving
    # to another pod continues from it), backed by a claim that allows that.
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    for path, name in mounts.items():
        check(name in volumes, f"k8s: volumeMount {path} names no volume {name}")
    kv_dir = args[args.index("--kv-cache-dir") + 1] if "--kv-cache-dir" in args else None
    if check(kv_dir is not None, "k8s: no --kv-cache-dir (sessions die with their pod)"):
        claim = volumes.get(mounts.get(kv_dir), {}).get("persistentVolumeClaim", {})
        pvc = [d for d in by_kind.get("PersistentVolumeClaim", [])
               if d["metadata"]["name"] == claim.get("claimName")]
        check(bool(pvc) and "ReadWriteMany" in pvc[0]["spec"]["accessModes"],
              f"k8s: --kv-cache-dir {kv_dir} is not on a ReadWriteMany claim the replicas share")
        check(pod.get("securityContext", {}).get("fsGroup") == image_uid,
              "k8s: no fsGroup: the textgen user cannot write the KV cache volume")


def check_compose(flags, image_ports):
    compose = load_all("deploy/docker-compose.yml")[0]
    services = compose["services"]
    replicas = [n for n in services if n.startswith("textgen-")]
    check(len(replicas) == 3, f"compose: {len(replicas)} replicas, the nginx config names 3")
    for name in replicas:
        unknown = [f for f in flags_in(services[name]["command"]) if f not in flags]
        check(not unknown, f"compose: {name} flags not in textgen-server --help: {unknown}")
    kv_dirs = set()
    for name in replicas:
        command = services[name]["command"]
        kv_dir = command[command.index("--kv-cache-dir") + 1] if "--kv-cache-dir" in command \
            else None
        mounted = {v.split(":")[1]: v.split(":")[0] for v in services[name].get("volumes", [])}
        check(kv_dir in mounted and mounted[kv_dir] in compose.get("volumes", {}),
              f"compose: {name} has no --kv-cache-dir on a named volume")
        kv_dirs.add(mounted.get(kv_dir))
    check(len(kv_dirs) == 1, f"compose: the replicas do not share one KV cache volume: {kv_dirs}")
    lb = open(f"{ARGS.repo}/deploy/nginx/textgen-lb.conf").read()
    for name in replicas:
        check(f"{name}:{image_ports['--listen']}" in lb, f"nginx: no upstream {name}")
    check("hash $http_x_session_id consistent" in lb, "nginx: no consistent hash on x-session-id")
    check(all(not s.get("image", "").startswith(("nginx", "prom/", "docker.io/prom"))
              for s in services.values()), "compose: registry images for Debian-packaged tools")
    prometheus = load_all("deploy/prometheus/prometheus.yml")[0]
    targets = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
    check(sorted(targets) == sorted(f"{n}:{image_ports['--metrics-listen']}" for n in replicas),
          f"prometheus: targets {targets} are not the replicas' metrics ports")


def check_envoy(image_ports):
    envoy = load_all("deploy/envoy/envoy.yaml")[0]["static_resources"]
    cluster = envoy["clusters"][0]
    check(cluster["lb_policy"] == "RING_HASH", "envoy: not ring_hash")
    route = envoy["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"][
        "route_config"]["virtual_hosts"][0]["routes"][0]["route"]
    check(route["hash_policy"][0]["header"]["header_name"] == "x-session-id",
          "envoy: does not hash on x-session-id")
    for endpoint in cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]:
        port = endpoint["endpoint"]["address"]["socket_address"]["port_value"]
        check(port == image_ports["--listen"], "envoy: an endpoint is not on the gRPC port")


def main():
    flags = server_flags()
    if not check(len(flags) > 20, f"textgen-server --help listed {len(flags)} flags"):
        print("\n".join(PROBLEMS))
        return 1
    entry_args, image_ports, uid, user = dockerfile_facts()
    unknown = [f for f in flags_in(entry_args) if f not in flags]
    check(not unknown, f"Dockerfile: ENTRYPOINT flags not in textgen-server --help: {unknown}")
    check(user != "root" and uid != 0, "Dockerfile: runs as root")
    check_kubernetes(flags, image_ports, uid)
    check_compose(flags, image_ports)
    check_envoy(image_ports)
    for problem in PROBLEMS:
        print(problem)
    print(f"deploy manifests: {len(PROBLEMS)} problems")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
