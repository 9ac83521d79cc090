"""The HTML audit report in a real headless browser (Chromium from Debian, ``make chromium``): it
renders to a screenshot that is not blank and shows the plots, and the DOM holds every section."""

from __future__ import annotations

from PIL import Image

from browser import headless
from mqbalance.fleet import audit_snapshot, example_fleet, snapshot_from_dict, write_outputs

WIDTH, HEIGHT = 1280, 4000
LOAD_CURVE = (0x3B, 0x7D, 0xD8)  # the load_vs_fair_share.png line colour (report.py)


def test_the_html_report_renders_in_headless_chromium(tmp_path):
    snap = snapshot_from_dict(example_fleet(7), "example <fleet>")
    result = audit_snapshot(snap, what_if="AVG,CONSISTENT_HASH_BOUNDED,STICKY")
    paths = write_outputs(result, tmp_path / "audit", source=snap.source)
    url = paths["report_html"].resolve().as_uri()

    shot = tmp_path / "report.png"
    headless(tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 50_000 < shot.stat().st_size < 20_000_000
    with Image.open(shot) as img:
        rgb = img.convert("RGB")
        assert rgb.size == (WIDTH, HEIGHT)
        colours = rgb.getcolors(maxcolors=1 << 20) or []
    inked = sum(n for n, c in colours if c != (255, 255, 255))
    assert inked > 0.02 * WIDTH * HEIGHT, "the page is (nearly) blank"
    assert len(colours) > 50  # text anti-aliasing, table rules and the plots, not a flat page
    curve = sum(n for n, c in colours if all(abs(a - b) <= 12 for a, b in zip(c, LOAD_CURVE)))
    assert curve > 200, "the load plot did not render"

    dom = headless(tmp_path, "--dump-dom", url).stdout
    for section in ('id="totals"', 'id="findings"', 'id="what-if"', 'id="plots"'):
        assert f"<section {section}>" in dom, section
    assert "mqbalance audit — example &lt;fleet&gt;" in dom
    assert "What if groups switched strategy" in dom and "<td>STICKY</td>" in dom
    assert 'src="load_vs_fair_share.png"' in dom and 'src="worst_groups.png"' in dom
