"""The RESULT|label|value lines the bench-*-vs-llamacpp.sh scripts record, as runs and medians."""

import statistics


def read_results(path):
    """Returns ({label: [value per round]}, {label: median})."""
    values = {}
    for line in open(path):
        _, label, value = line.rstrip("\n").split("|")
        if value:
            values.setdefault(label, []).append(float(value))
    return values, {k: statistics.median(v) for k, v in values.items()}
