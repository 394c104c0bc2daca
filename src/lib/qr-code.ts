import QRCode from 'qrcode'

/**
 * A QR code as an inline SVG document, rendered on the server by `qrcode` (maintained, no
 * native parts), so the set-up page needs no script and loads nothing. Error correction M
 * (ISO/IEC 18004: about 15% recoverable), enough for a screen; a 4-module quiet zone as the
 * standard asks.
 */
export async function qrCodeSvg(text: string, label: string): Promise<string> {
  const svg = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 })
  // An image with a name for assistive technology (WCAG 1.1.1); `label` is the caller's fixed words.
  return svg.replace('<svg ', `<svg role="img" aria-label="${label.replace(/[&<>"]/g, '')}" `)
}
