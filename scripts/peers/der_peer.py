"""pyannote.metrics 4.2.0's diarization error rate for the cases on stdin (the peer of src/diarize/der.ts).

stdin: a JSON list of {"reference": [turn...], "hypothesis": [turn...], "collar": seconds, "skip_overlap": bool},
a turn being {"start", "end", "speaker"}; `collar` is pyannote's (the whole width around each boundary).
stdout: a JSON list of {"der", "missed", "false_alarm", "confusion", "total"}, one per case, in order.
"""
import json
import sys

from pyannote.core import Annotation, Segment
from pyannote.metrics.diarization import DiarizationErrorRate


def annotation(turns):
    result = Annotation()
    for index, turn in enumerate(turns):
        result[Segment(turn["start"], turn["end"]), index] = turn["speaker"]
    return result


def main():
    out = []
    for case in json.load(sys.stdin):
        metric = DiarizationErrorRate(collar=case["collar"], skip_overlap=case["skip_overlap"])
        parts = metric(annotation(case["reference"]), annotation(case["hypothesis"]), detailed=True)
        out.append(
            {
                "der": parts["diarization error rate"],
                "missed": parts["missed detection"],
                "false_alarm": parts["false alarm"],
                "confusion": parts["confusion"],
                "total": parts["total"],
            }
        )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
