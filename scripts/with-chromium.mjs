// Runs Slidev with a Chromium for the PDF it prints (npm run build, npm run export):
// $CHROMIUM when set, else the first of the usual places that exists. Usage: node with-chromium.mjs <slidev args>
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const USUAL = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome-stable', '/usr/bin/google-chrome',
  '/snap/bin/chromium', '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium'];
const named = process.env.CHROMIUM;
if (named && !existsSync(named)) {
  console.error(`with-chromium: CHROMIUM=${named} does not exist`);
  process.exit(1);
}
const chromium = named || USUAL.find((p) => existsSync(p));
if (!chromium) {
  console.error(`with-chromium: no Chromium found (looked in ${USUAL.join(', ')}): set CHROMIUM to one, or install one (Debian: apt-get install chromium)`);
  process.exit(1);
}
const slidev = fileURLToPath(new URL('../node_modules/.bin/slidev', import.meta.url));
const args = [...process.argv.slice(2), '--executable-path', chromium];

// Slidev's output passed through as it comes, its tail kept to read why it failed
function slidevRun() {
  return new Promise((resolve) => {
    const child = spawn(slidev, args, { stdio: ['inherit', 'pipe', 'pipe'] });
    let tail = '';
    for (const [from, to] of [[child.stdout, process.stdout], [child.stderr, process.stderr]]) {
      from.on('data', (chunk) => { to.write(chunk); tail = (tail + chunk).slice(-20000); });
    }
    child.on('close', (code) => resolve({ code: code ?? 1, tail }));
  });
}

let run = await slidevRun();
// The print page's load can be aborted on a loaded machine (slidevjs/slidev#397): once more, said so
if (run.code !== 0 && run.tail.includes('net::ERR_ABORTED')) {
  console.error("with-chromium: the PDF export's page load was aborted (net::ERR_ABORTED, Slidev's export on a loaded machine): running it once more");
  run = await slidevRun();
}
process.exit(run.code);
