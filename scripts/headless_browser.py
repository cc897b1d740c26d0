"""A page in headless chromium, driven over the Chrome DevTools Protocol with the `websockets`
client (which viser depends on): open a URL, take screenshots, run a line of JavaScript.

Used by the browser-view test (test/test_viewer.py) and by scripts/viewer_picture.py (the
README's picture). Chromium renders WebGL with SwiftShader here (no GPU).
"""
import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
TIMEOUT = 60.0

#: viser's notification when WebGL runs in software (SwiftShader here), closed as a user would
#: with its x button, so that it does not cover the scene in screenshots.
CLOSE_SOFTWARE_RENDERING_NOTICE = '''(() => {
  for (const n of document.querySelectorAll('.mantine-Notification-root')) {
    if (!n.textContent.includes('Software WebGL rendering')) continue;
    const close = n.querySelector('button');
    if (close) { close.click(); return 'closed'; }
  }
  return document.body.textContent.includes('Software WebGL rendering') ? 'shown' : 'none';
})()'''


class Browser:
    """One headless chromium page on ``url`` (``user_data_dir``: an empty folder of its own)."""

    def __init__(self, url, user_data_dir, size=(1280, 800)):
        from websockets.sync.client import connect
        if CHROMIUM is None:
            raise RuntimeError('chromium is not on PATH (Debian: apt-get install -y chromium)')
        self.proc = subprocess.Popen(
            [CHROMIUM, '--headless=new', '--no-sandbox', '--use-angle=swiftshader',
             '--enable-unsafe-swiftshader', '--remote-debugging-port=0',
             f'--user-data-dir={user_data_dir}', f'--window-size={size[0]},{size[1]}',
             '--no-first-run', 'about:blank'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(user_data_dir, 'DevToolsActivePort')
        deadline = time.monotonic() + TIMEOUT
        while not (os.path.exists(port_file) and len(open(port_file).read().split()) >= 2):
            if self.proc.poll() is not None:
                raise RuntimeError('chromium exited at start')
            if time.monotonic() > deadline:
                raise RuntimeError('chromium did not open its DevTools port')
            time.sleep(0.05)
        port = open(port_file).read().split()[0]
        req = urllib.request.Request(f'http://127.0.0.1:{port}/json/new?{url}', method='PUT')
        target = json.load(urllib.request.urlopen(req, timeout=10))
        self.ws = connect(target['webSocketDebuggerUrl'], max_size=None)
        self.n = 0

    def call(self, method, **params):
        """One DevTools command; its result (RuntimeError with the message on an error)."""
        self.n += 1
        self.ws.send(json.dumps({'id': self.n, 'method': method, 'params': params}))
        while True:
            m = json.loads(self.ws.recv(timeout=TIMEOUT))
            if m.get('id') == self.n:
                if 'error' in m:
                    raise RuntimeError(f'{method}: {m["error"]}')
                return m['result']

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page."""
        return self.call('Runtime.evaluate', expression=expression,
                         returnByValue=True)['result'].get('value')

    def close_software_rendering_notice(self):
        """'closed', 'shown' (not closable yet) or 'none'."""
        return self.evaluate(CLOSE_SOFTWARE_RENDERING_NOTICE)

    def screenshot(self):
        """PNG bytes of the page."""
        return base64.b64decode(self.call('Page.captureScreenshot', format='png')['data'])

    def close(self):
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
