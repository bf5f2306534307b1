"""Viterbi against brute force: every state sequence of small step-wise HMMs is scored and the best wins."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.crafty.hmm import sequence_score, viterbi


def _model(draw, states, steps):
    floats = st.floats(min_value=-20.0, max_value=0.0, allow_nan=False, width=32)

    def arr(*shape):
        size = int(np.prod(shape))
        return np.array(draw(st.lists(floats, min_size=size, max_size=size)), dtype=np.float64).reshape(shape)

    return arr(states), arr(steps - 1, states, states), arr(states, steps), arr(states)


@st.composite
def hmms(draw):
    states = draw(st.integers(1, 4))
    steps = draw(st.integers(1, 5))
    return _model(draw, states, steps)


@settings(max_examples=150, deadline=None)
@given(hmms())
def test_viterbi_matches_brute_force(model):
    initial, transitions, emissions, final = model
    states, steps = emissions.shape
    best = max(
        sequence_score(np.array(seq), initial, transitions, emissions, final)
        for seq in itertools.product(range(states), repeat=steps)
    )
    seq, score = viterbi(initial, transitions, emissions, final)
    assert len(seq) == steps
    assert np.isclose(score, best, rtol=0, atol=1e-9)
    # the returned sequence really has the returned score
    assert np.isclose(sequence_score(seq, initial, transitions, emissions, final), score, rtol=0, atol=1e-9)


def test_self_transitions_hold_a_state():
    # two states; emissions mildly prefer switching at step 2, but a strong self-transition keeps state 0
    initial = np.log([0.6, 0.4])
    stay = np.log([[0.9, 0.1], [0.1, 0.9]])
    emissions = np.log([[0.5, 0.5, 0.4], [0.5, 0.5, 0.6]])
    seq, _ = viterbi(initial, np.stack([stay, stay]), emissions, np.zeros(2))
    assert seq.tolist() == [0, 0, 0]
    free = np.log([[0.5, 0.5], [0.5, 0.5]])
    seq, _ = viterbi(initial, np.stack([free, free]), emissions, np.zeros(2))
    assert seq.tolist() == [0, 0, 1]
