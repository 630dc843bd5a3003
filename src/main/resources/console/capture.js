// A captured message (docs/design.md §8.10: kept, never relayed) as GET /api/v1/captures/{id} parses it: its header
// fields, its text, its HTML part and its attachments. The HTML is a stranger's markup: it is shown only inside an
// iframe that is sandboxed with no permission at all (no allow-scripts, no allow-same-origin: no script runs and the
// frame has no origin to reach the API or this tab's storage with) and whose document forbids every load but inline
// styles and data: images (its own Content-Security-Policy, on top of the console's, which it inherits). Everything
// else goes in as text nodes.

import {api, ProblemError} from './api.js';
import {bytes, h, replace, timeEl} from './dom.js';

/** What the framed document may load: nothing from the network (a remote image is a read receipt). */
const FRAME_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The HTML part as the frame's whole document, under FRAME_POLICY. */
export function framedDocument(html) {
  return `<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${FRAME_POLICY}">`
    + `<base target="_blank">${html}`;
}

export function capturePanel(id) {
  const body = h('div', {id: 'capture-body'}, h('p', {class: 'hint'}, 'Reading the captured message…'));
  const element = h('section', {class: 'capture', id: 'capture', 'aria-labelledby': 'capture-title'},
    h('h2', {id: 'capture-title'}, 'Captured message'),
    h('p', {class: 'hint'}, 'Kept by the gateway and never relayed. ',
      h('span', {id: 'capture-expiry'})),
    body);

  async function load() {
    try {
      draw(await api(`/api/v1/captures/${id}`));
    } catch (e) {
      replace(body, h('p', {class: 'error', role: 'alert', id: 'capture-error'}, e instanceof ProblemError && e.status === 404
        ? 'Its bytes are gone: past capture.retention, or erased.'
        : `The captured message could not be read: ${e.message}`));
    }
  }

  function draw(c) {
    replace(element.querySelector('#capture-expiry'), 'Its bytes are deleted at ', timeEl(c.expiresAt), '.');
    const headers = h('dl', {class: 'facts capture-headers', id: 'capture-headers'},
      c.headers.map((x) => [h('dt', {}, x.name), h('dd', {}, x.value)]));
    const parts = [h('h3', {}, 'Headers'), headers];
    if (c.text !== null && c.text !== undefined) {
      parts.push(h('h3', {}, 'Text'), h('pre', {class: 'capture-text', id: 'capture-text'}, c.text));
    }
    if (c.html !== null && c.html !== undefined) {
      const frame = h('iframe', {id: 'capture-html', class: 'capture-html', title: 'The HTML part, without scripts or network',
        sandbox: '', referrerpolicy: 'no-referrer', loading: 'lazy'});
      frame.srcdoc = framedDocument(c.html);
      parts.push(h('h3', {}, 'HTML'), frame);
    }
    parts.push(h('h3', {}, 'Attachments'), c.attachments.length === 0
      ? h('p', {class: 'hint', id: 'capture-attachments'}, 'None.')
      : h('ul', {id: 'capture-attachments'}, c.attachments.map((a) =>
        h('li', {}, h('span', {class: 'mono'}, a.name ?? '(no name)'), ` ${a.type}, ${bytes(a.size)}`))));
    parts.push(h('p', {}, `${bytes(c.size)} in all. The raw message: GET /api/v1/captures/${c.id}/raw (message/rfc822).`));
    replace(body, parts);
  }

  return {element, load};
}
