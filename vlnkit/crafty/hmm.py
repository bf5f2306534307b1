"""Viterbi decoding of an HMM whose transition matrix changes at every step, in log space.

Crafty's Observer builds one transition matrix per motion (appendix B.3; google-research/crafty
`hmm.py`, `BaseHMM.viterbi_decode`), so the model is given as arrays: `initial` (S,), `transitions`
(T-1, S, S), `emissions` (S, T) (the log-probability of each step's observation under each state) and
`final` (S,). Each step is one (S, S) max-plus product; ties go to the lowest state index (the reference
takes the first maximum too).
"""

from __future__ import annotations

import numpy as np


def viterbi(
    initial: np.ndarray, transitions: np.ndarray, emissions: np.ndarray, final: np.ndarray
) -> tuple[np.ndarray, float]:
    """(best state sequence (T,), its log score) of the step-wise HMM."""
    steps = emissions.shape[1]
    if transitions.shape[0] != steps - 1:
        raise ValueError(f"{steps} observations need {steps - 1} transition matrices, got {transitions.shape[0]}")
    score = initial + emissions[:, 0]
    back = np.zeros((max(steps - 1, 0), len(initial)), dtype=np.int64)
    for t in range(1, steps):
        cand = score[:, None] + transitions[t - 1]  # (prev, cur)
        back[t - 1] = np.argmax(cand, axis=0)
        score = cand[back[t - 1], np.arange(len(initial))] + emissions[:, t]
    total = score + final
    state = int(np.argmax(total))
    best = float(total[state])
    seq = np.empty(steps, dtype=np.int64)
    seq[-1] = state
    for t in range(steps - 1, 0, -1):
        state = int(back[t - 1, state])
        seq[t - 1] = state
    return seq, best


def sequence_score(seq, initial, transitions, emissions, final) -> float:
    """Log score of one state sequence under the model (what Viterbi maximises)."""
    s = initial[seq[0]] + emissions[seq[0], 0]
    for t in range(1, len(seq)):
        s += transitions[t - 1][seq[t - 1], seq[t]] + emissions[seq[t], t]
    return float(s + final[seq[-1]])
