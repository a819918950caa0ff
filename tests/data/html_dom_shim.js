// Runs the HTML explorer's script under node with a tiny DOM: catches runtime errors in the inline JS and
// prints what it rendered (rows, tree nodes) so a test can check it. Usage: node html_dom_shim.js report.html
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
const data = html.match(/<script type="application\/json" id="kf-data">([\s\S]*?)<\/script>/)[1];
// The code is the last <script> element (the data may contain the text "<script>", never "</script").
const start = html.lastIndexOf('<script>') + '<script>'.length;
const code = html.slice(start, html.indexOf('</script>', start));
class El {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {}; this.className = ''; this._text = '';
    this.classList = { add: c => { this.className += ' ' + c; }, remove: c => { this.className = this.className.replace(c, ''); } }; }
  append(...ks) { for (let k of ks) { if (typeof k === 'string') { const t = new El('#text'); t._text = k; k = t; } k.parent = this; this.children.push(k); } }
  setAttribute(k, v) { this.attrs[k] = v; }
  remove() { if (this.parent) this.parent.children = this.parent.children.filter(c => c !== this); }
  after(e) { const p = this.parent; const i = p.children.indexOf(this); e.parent = p; p.children.splice(i + 1, 0, e); }
  set innerHTML(v) { this.children = []; this._text = v; }
  set textContent(v) { this.children = []; this._text = v; }
  get textContent() { return this._text + this.children.map(c => c.textContent).join(''); }
}
const byId = { 'kf-data': Object.assign(new El('script'), { _text: data }), q: Object.assign(new El('input'), { value: '' }),
               rows: new El('tbody'), trees: new El('div') };
byId.trees.parent = new El('body'); byId.trees.parent.children.push(byId.trees);
global.document = { getElementById: id => byId[id], createElement: t => new El(t) };
eval(code);
const rows = byId.rows.children;
console.log('rows', rows.length);
for (const r of rows) console.log('row', r.children.map(c => c.textContent).join(' | '));
// Click the first row (details) and every tree node (source + diff to parent).
if (rows.length) rows[0].onclick();
console.log('details', byId.rows.children[1] ? byId.rows.children[1].textContent.length : 0);
const spans = [];
const walk = e => { if (e.tag === 'span' && e.onclick) spans.push(e); (e.children || []).forEach(walk); };
walk(byId.trees);
for (const s of spans) s.onclick();
console.log('tree nodes', spans.length);
console.log('last view', spans.length ? byId.trees.textContent.slice(-400) : '');
byId.q.value = 'zzz-no-match'; byId.q.oninput();
console.log('filtered rows', byId.rows.children.length);
