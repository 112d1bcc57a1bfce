// Runs Slidev with a Chromium for the PDF it prints (npm run build, npm run export):
// $CHROMIUM when set, else the first of the usual places that exists. Usage: node with-chromium.mjs <slidev args>
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
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
const run = spawnSync(slidev, [...process.argv.slice(2), '--executable-path', chromium], { stdio: 'inherit' });
process.exit(run.status ?? 1);
