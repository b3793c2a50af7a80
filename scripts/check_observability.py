#!/usr/bin/python3
"""Checks the shipped monitoring files against live textgen replicas (scripts/test-scale-out.sh).

- Every metric the Grafana dashboard and the Prometheus alerts name is in a live /metrics
  scrape of a replica (histogram series as NAME_bucket / _sum / _count).
- Prometheus, scraping the replicas with deploy/prometheus/prometheus.yml, answers the p50 and
  p99 time-to-first-token histogram_quantile with finite numbers, every dashboard query with
  data, and evaluates every alert expression.
Prints a JSON report; exit status 1 when a check fails.
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

TTFT_QUERY = ("histogram_quantile({q}, sum by (le) "
              "(rate(textgen_time_to_first_token_seconds_bucket[1m])))")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prometheus", required=True, help="base URL of the Prometheus server")
    p.add_argument("--metrics", required=True, help="a replica's /metrics URL")
    p.add_argument("--dashboard", required=True)
    p.add_argument("--alerts", required=True)
    p.add_argument("--wait", type=float, default=60, help="seconds to wait for the scrapes")
    return p.parse_args()


def get(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def query(base, expr):
    """Instant query; returns (status, result list)."""
    reply = json.loads(get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    return reply["status"], reply["data"]["result"] if reply["status"] == "success" else []


def finite_value(result):
    values = [float(r["value"][1]) for r in result]
    return next((v for v in values if math.isfinite(v)), None)


def metric_names(expressions):
    return sorted({name for e in expressions for name in re.findall(r"\btextgen_[a-z_]+", e)})


def main():
    args = parse_args()
    failures = []
    dashboard = json.load(open(args.dashboard))
    panel_queries = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])
                     if "expr" in t]
    alert_queries = re.findall(r"^\s*expr:\s*(.+)$", open(args.alerts).read(), re.MULTILINE)
    if not panel_queries or not alert_queries:
        failures.append("no queries found in the dashboard or the alerts file")

    scrape = get(args.metrics)
    exposed = {line.split("{")[0].split(" ")[0] for line in scrape.splitlines()
               if line and not line.startswith("#")}
    missing = [n for n in metric_names(panel_queries + alert_queries) if n not in exposed]
    if missing:
        failures.append(f"queried but not exposed by the replica: {missing}")

    # Wait until Prometheus has two scrapes around the traffic, so rate() has something.
    deadline = time.monotonic() + args.wait
    ttft = {}
    while True:
        for q in (0.5, 0.99):
            _, result = query(args.prometheus, TTFT_QUERY.format(q=q))
            ttft[q] = finite_value(result)
        if all(v is not None for v in ttft.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    if any(v is None for v in ttft.values()):
        failures.append(f"Prometheus gave no TTFT quantile within {args.wait:.0f} s: {ttft}")

    empty = [e for e in panel_queries if not all(query(args.prometheus, e))]
    if empty:
        failures.append(f"dashboard queries without data: {empty}")
    # Alerts are false on a healthy run (no series is fine); they must evaluate.
    broken = [e for e in alert_queries if query(args.prometheus, e)[0] != "success"]
    if broken:
        failures.append(f"alert expressions Prometheus refuses: {broken}")

    _, up = query(args.prometheus, 'up{job="textgen"}')
    report = {
        "ttft_p50_seconds": ttft.get(0.5), "ttft_p99_seconds": ttft.get(0.99),
        "targets_up": sum(1 for r in up if r["value"][1] == "1"), "targets": len(up),
        "dashboard_queries": len(panel_queries), "alert_queries": len(alert_queries),
        "metrics_checked": len(metric_names(panel_queries + alert_queries)),
        "failures": failures,
    }
    print(json.dumps(report, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
