"""The shared-link calendar never books more than one cycle of traffic per cycle."""
from hypothesis import given, settings
from hypothesis import strategies as st

from minicompile.spyre.cost import Calendar, dma_bytes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 60)), max_size=40))
def test_bookings_conserve_bandwidth(requests):
    cal = Calendar()
    for t, cycles in requests:
        first, last = cal.reserve(t, cycles)
        assert first >= t and last - first >= cycles
    spans = list(zip(cal.starts, cal.ends))
    assert all(s < e for s, e in spans)
    assert all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))  # disjoint, merged
    assert sum(e - s for s, e in spans) == cal.busy == sum(c for _, c in requests)


def test_strided_rows_cost_whole_transfer_units():
    assert dma_bytes(0, 4096, 4, 256, 128) == 4 * 256       # aligned rows: exact
    assert dma_bytes(0, 4096, 4, 64, 128) == 4 * 128        # short rows: a whole unit each
    assert dma_bytes(64, 4096, 1, 128, 128) == 256          # misaligned: straddles two units
