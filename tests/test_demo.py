"""``python -m minicompile demo`` fits a screen or two and says where the rest is."""
from minicompile import demo
from minicompile.inductor.codegen.cpp.ops import INCLUDE_DIR


def test_demo_is_short_and_points_at_the_headers_and_the_logs(capsys):
    assert demo.main(rows=64, cols=128) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 300
    assert f"#include \"{INCLUDE_DIR}" in out and str(INCLUDE_DIR) in out and "MINICOMPILE_LOGS=output_code" in out
    assert "static inline float mc_tanh_f32" not in out  # named, not pasted
