// Opens a built deck as a plain static host serves it: a slide by its URL, and the presenter view
// with its notes. Prints JSON: {slide, notes}. Usage: node presenter_check.mjs <base url> <slide> <chromium>
import { chromium } from 'playwright-chromium';

const [base, n, executablePath] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath });
const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
await page.goto(`${base}/#/${n}`, { waitUntil: 'load' });
const slide = await page.waitForSelector(`.slidev-page-${n}`, { state: 'visible', timeout: 30000 }).then(() => true, () => false);
await page.goto(`${base}/#/presenter/1`, { waitUntil: 'load' });
const note = await page.waitForSelector('.slidev-note', { state: 'visible', timeout: 30000 }).then((e) => e.textContent(), () => '');
await browser.close();
console.log(JSON.stringify({ slide, notes: (note || '').trim() }));
