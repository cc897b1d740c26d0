"""The README's picture of the browser view (docs/images/viewer_demo.png), made again.

Runs the demo with its live view (scripts/demo.py --view, at a fifth of real time), opens the
view in headless chromium (scripts/headless_browser.py) and keeps, of the screenshots taken
during the wall contacts on the arm's last link, the one with the longest force arrow. viser's notice that WebGL runs
in software (SwiftShader: there is no GPU here) is closed first, as a user would close it.

    python scripts/viewer_picture.py [--out out/viewer_demo.png] [--port PORT]

Writes the PNG to out/ (copy it to docs/images/viewer_demo.png to update the README).
"""
import argparse
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import headless_browser  # noqa: E402

CONTACT_LINE = 'isolated: contact on arm_link_7'
END_LINE = '[demo] true contact'          # the run is over, the summary follows


def _pixels(png):
    """Pixels of the force arrow's red and of dark label text in the 3D area (left of the GUI
    panel, below the notices, right of the axes gizmo) of a 1280 px wide screenshot."""
    import numpy as np
    from PIL import Image
    a = np.asarray(Image.open(io.BytesIO(png)).convert('RGB')).astype(int)[160:, 100:940]
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    return int(((r > 150) & (r - g > 60) & (r - b > 60)).sum()), int((a.max(axis=2) < 90).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', default=os.path.join(ROOT, 'out', 'viewer_demo.png'))
    ap.add_argument('--port', type=int, default=0, help='the view\'s port (default: a free one)')
    ap.add_argument('--period', type=float, default=0.5,
                    help='wall seconds between screenshots during the run')
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if not args.port:
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            args.port = s.getsockname()[1]

    print('[picture] starting the demo with its browser view (about a minute) ...', flush=True)
    demo = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, 'scripts', 'demo.py'), '--view', '--view-port',
         str(args.port), '--real-time-factor', '0.2', '--scenario', 'wall', '--timeout', '200'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED='1'))
    seen = threading.Event()
    lines = []

    def follow():
        for line in demo.stdout:
            lines.append(line)
            print('  ' + line, end='', flush=True)
            if CONTACT_LINE in line:
                seen.set()
    threading.Thread(target=follow, daemon=True).start()

    browser = None
    with tempfile.TemporaryDirectory() as profile:
        try:
            while not any('live view:' in line for line in lines):
                if demo.poll() is not None:
                    raise SystemExit('[picture] the demo ended before its view started')
                time.sleep(0.2)
            time.sleep(2.0)          # the viewer's server is listening shortly after its line
            print('[picture] opening the view in headless chromium', flush=True)
            browser = headless_browser.Browser(f'http://127.0.0.1:{args.port}/', profile)
            # the notice appears once the page has set up WebGL; closed, it fades out
            states, deadline = [], time.monotonic() + 60
            while not ('closed' in states and states[-1] == 'none'):
                if time.monotonic() > deadline:
                    raise SystemExit(f'[picture] the software-rendering notice: {states[-3:]}')
                states.append(browser.close_software_rendering_notice())
                time.sleep(0.2)
            print('[picture] closed the software-rendering notice; screenshots until the end '
                  'of the run', flush=True)
            # the frame with the arrow's label (link and |f|) and the longest arrow
            best, shots = ((False, 0), None), 0
            while not any(END_LINE in line for line in lines) and demo.poll() is None:
                png = browser.screenshot()
                shots += 1
                red, dark = _pixels(png)
                best = max(best, ((dark > 30, red), png), key=lambda b: b[0])
                time.sleep(args.period)
            (labelled, red), png = best
            if not seen.is_set() or png is None or red < 100:
                raise SystemExit(f'[picture] no contact arrow in {shots} screenshots')
            print(f'[picture] of {shots} screenshots: the longest arrow ({red} red pixels)'
                  + (' with its label' if labelled else ', no label seen'), flush=True)
            with open(args.out, 'wb') as f:
                f.write(png)
            print(f'[picture] wrote {args.out} ({len(png)} bytes)', flush=True)
        finally:
            if browser is not None:
                browser.close()
            try:                      # the demo ends by itself and stops its processes
                demo.wait(300)
            except subprocess.TimeoutExpired:
                demo.terminate()
                demo.wait(30)


if __name__ == '__main__':
    main()
