// Opens every slide of a built deck in Chromium at Slidev's canvas size (980 x 552, scale 1), in
// every click state (a magic-move's morph, a highlight), and prints, as JSON, what a room would not see: elements past the slide's edges, code blocks that
// scroll or clip, text under 12 px (code 11), figure text under 10 px at the size it is shown, and
// titles that wrap; and what data must never become: an element with an event handler, a page title
// changed by script. Usage: node deck_check.mjs <base url> <slides> <chromium> [first]
// "first": each slide's first state only (a deck whose click states another walk has checked).
import { chromium } from 'playwright-chromium';

const [base, count, executablePath, walk] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath });
const page = await browser.newPage({ viewport: { width: 980, height: 552 } });
const problems = [];
let clicked = 0;                 // click states walked past the first of each slide
// A click moves the route to #/<n>?clicks=<k> while it stays on slide n; past its last click, to #/<n+1>.
const ROUTE_MS = 2000;           // at most, for the route to change (it does not past the last slide)
const SETTLE_MS = 5000;          // at most, for a click's transitions (a magic-move's morph) to end
const MAX_CLICKS = 20;
// what takes clicks on a slide (v-click and v-clicks, a magic-move, lines lit by click): a slide with
// none has one state, and the walk does not press through it
const CLICKABLE = '.slidev-vclick-target, .slidev-code-magic-move, .slidev-code-highlighted';
for (let n = 1; n <= Number(count); n++) {
  await page.goto(`${base}/#/${n}`, { waitUntil: 'load' });
  await page.waitForSelector(`.slidev-page-${n}`, { state: 'visible' });
  await page.evaluate(() => Promise.all([document.fonts.ready,
    ...[...document.images].map((i) => i.complete ? null : new Promise((r) => { i.onload = i.onerror = r; }))]));
  problems.push(...await check(n, 0));
  if (walk === 'first' || !(await page.$(`.slidev-page-${n} :is(${CLICKABLE})`))) continue;
  for (let k = 1; k <= MAX_CLICKS; k++) {
    const before = await page.evaluate(() => location.hash);
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((h) => location.hash !== h, before, { timeout: ROUTE_MS, polling: 'raf' }).catch(() => null);
    if (!(await page.evaluate(() => location.hash)).startsWith(`#/${n}?`)) break;
    await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running'), null,
                               { timeout: SETTLE_MS, polling: 100 });
    clicked += 1;
    problems.push(...await check(n, k));
  }
}
await browser.close();
console.log(JSON.stringify({ problems, clicked }));

async function check(n, click) {
  const found = await page.evaluate(async (n) => {
    const out = [];
    const slide = document.querySelector('#slide-content').getBoundingClientRect();
    const root = document.querySelector(`.slidev-page-${n}`);
    const title = (root.querySelector('h1') || {}).textContent || '';
    const name = (e) => `${e.tagName.toLowerCase()} "${(e.textContent || e.getAttribute('src') || '').trim().slice(0, 60)}"`;
    const visible = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const shown = [...root.querySelectorAll('*')].filter((e) =>
      visible(e) && (e.matches('img, svg, table, pre') || [...e.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())));
    for (const e of shown) {
      if (e.closest('.slidev-code-copy')) continue;              // the copy button shows on hover only
      const r = e.getBoundingClientRect();
      const past = [['left', slide.left - r.left], ['right', r.right - slide.right],
                    ['top', slide.top - r.top], ['bottom', r.bottom - slide.bottom]].filter(([, d]) => d > 1);
      for (const [edge, d] of past) out.push({ slide: n, title, what: `${name(e)} is ${Math.round(d)} px past the ${edge} edge` });
    }
    for (const e of shown) {                                       // text: prose 12 px and up, code 11
      if (e.closest('.slidev-code-copy') || !e.textContent.trim()) continue;
      const min = e.closest('pre') ? 11 : 12;
      const px = parseFloat(getComputedStyle(e).fontSize);
      if ([...e.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim()) && px < min - 0.05)
        out.push({ slide: n, title, what: `${name(e)} is set at ${px.toFixed(1)} px, under ${min}` });
    }
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const luminance = ([r, g, b]) => [r, g, b].map((v) => v / 255).map((v) => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const backdrop = (e) => {                                       // the nearest background that is painted
      for (let a = e; a; a = a.parentElement) {
        const c = rgb(getComputedStyle(a).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0)) return c;
      }
      return [255, 255, 255];
    };
    for (const e of shown) {                                       // code text: 3:1 against its background at least
      if (!e.closest('pre') || ![...e.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())) continue;
      const [hi, lo] = [luminance(rgb(getComputedStyle(e).color)), luminance(backdrop(e))].sort((a, b) => b - a);
      const ratio = (hi + 0.05) / (lo + 0.05);
      if (ratio < 3) out.push({ slide: n, title, what: `${name(e)} is at ${ratio.toFixed(1)}:1 against its background, under 3:1` });
    }
    for (const e of root.querySelectorAll('*')) {                 // data never becomes a handler
      const handlers = [...e.attributes].map((a) => a.name).filter((a) => a.startsWith('on'));
      if (handlers.length) out.push({ slide: n, title, what: `${name(e)} carries ${handlers.join(', ')}` });
    }
    if (document.title === 'pwned') out.push({ slide: n, title, what: `script ran: the page title is "${document.title}"` });
    const h1 = root.querySelector('h1');                            // a title on one line
    if (h1 && visible(h1)) {
      const range = document.createRange();
      range.selectNodeContents(h1);
      const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (lines.size > 1) out.push({ slide: n, title, what: `the title takes ${lines.size} lines` });
    }
    for (const pre of root.querySelectorAll('pre')) {
      if (pre.scrollHeight > pre.clientHeight + 1 || pre.scrollWidth > pre.clientWidth + 1)
        out.push({ slide: n, title, what: `code block scrolls: ${pre.scrollWidth}x${pre.scrollHeight} in ${pre.clientWidth}x${pre.clientHeight}` });
    }
    for (const img of root.querySelectorAll('img[src$=".svg"]')) {  // figure text: 10 px and up as shown
      if (!visible(img)) continue;
      const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml').documentElement;
      const box = document.createElement('div');               // laid out off the slide to read computed sizes
      box.style.cssText = 'position:fixed;left:-10000px;top:0';
      box.appendChild(document.importNode(svg, true));
      document.body.appendChild(box);
      const drawn = box.firstChild;
      const scale = img.getBoundingClientRect().width / (drawn.viewBox.baseVal?.width || drawn.width.baseVal.value);
      const small = [...drawn.querySelectorAll('text')].filter((t) => t.textContent.trim())
        .map((t) => [parseFloat(getComputedStyle(t).fontSize) * scale, t.textContent.trim()])
        .filter(([px]) => px < 9.95).sort((a, b) => a[0] - b[0]);
      box.remove();
      if (small.length)
        out.push({ slide: n, title, what: `${name(img)}: ${small.length} texts under 10 px as shown, smallest "${small[0][1].slice(0, 30)}" at ${small[0][0].toFixed(1)} px` });
    }
    return out;
  }, n);
  return found.map((p) => (click ? { ...p, click } : p));
}
