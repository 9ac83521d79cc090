"""The documentation site in a real headless browser (Chromium from Debian, ``make chromium``): built
strict from ``mkdocs.yml`` into a temporary folder and served over HTTP, its home page and one guide
render with their title, a heading and the navigation, every stylesheet and script they ask for is
served (no 404), and the theme's styles apply (the header is the theme's colour, not unstyled)."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path

import pytest
from PIL import Image

from browser import headless

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 1280, 900
HEADER = (0x40, 0x51, 0xB5)  # Material's default primary colour (indigo), the header bar


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built strict, served on a free loopback port; yields (base URL, requests seen)."""
    out = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=True,
        timeout=300,
    )
    seen: list[tuple[str, int]] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            seen.append((self.path, int(code) if str(code).isdigit() else 0))

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "path, title, heading",
    [("/", "mqbalance", "mqbalance"), ("/guide/kafka/", "Kafka assignment - mqbalance", "Kafka assignment")],
)
def test_a_page_renders_with_its_title_heading_navigation_and_styles(site, tmp_path, path, title, heading):
    base, seen = site
    seen.clear()
    dom = headless(tmp_path, "--dump-dom", base + path).stdout
    assert f"<title>{title}</title>" in dom
    assert f">{heading}" in dom and "<h1" in dom
    assert 'class="md-nav' in dom and "Guides" in dom and "API reference" in dom
    for label in ("RocketMQ allocation", "Fleet audit", "Performance", "Error types", "mqbalance.kafka"):
        assert label in dom, label

    assets = [(p, code) for p, code in seen if p.split("?")[0].endswith((".css", ".js"))]
    assert any(p.split("?")[0].endswith(".css") for p, _ in assets), seen
    assert all(code == 200 for _, code in assets), [a for a in assets if a[1] != 200]
    assert all(code != 404 for _, code in seen), seen

    shot = tmp_path / "page.png"
    headless(tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", base + path)
    with Image.open(shot) as img:
        top = img.convert("RGB").crop((0, 0, WIDTH, 40))
        colours = top.getcolors(maxcolors=1 << 16) or []
    header = sum(n for n, c in colours if all(abs(a - b) <= 8 for a, b in zip(c, HEADER)))
    assert header > 0.5 * WIDTH * 40, "the header is not the theme's colour: the stylesheet did not apply"
