/*
 * Copy buttons for the console's application page (docs/operating/branding.md, "Copy buttons"):
 * the client ID and a client secret shown once. Progressive enhancement: without this script the
 * buttons stay hidden and the values are plain text to select and copy; with it each button
 * copies its value with the Clipboard API and the page's live region says so (WAI-ARIA 1.2,
 * aria-live). Where the clipboard is refused, the value is selected for the keyboard's copy.
 */
;(function () {
  'use strict'
  var status = document.getElementById('copy-status')

  function announce(message) {
    if (!status) return
    // A new text node each time, so the same words are announced again on a second copy.
    status.textContent = ''
    status.appendChild(document.createTextNode(message))
  }

  function select(element) {
    var range = document.createRange()
    range.selectNodeContents(element)
    var selection = window.getSelection()
    selection.removeAllRanges()
    selection.addRange(range)
  }

  function copy(button) {
    var target = document.getElementById(button.getAttribute('data-copy'))
    if (!target) return
    var label = button.getAttribute('data-copy-label') || 'Value'
    var done = function () {
      button.querySelector('.copy-word').textContent = 'Copied'
      announce(label + ' copied')
      window.setTimeout(function () {
        button.querySelector('.copy-word').textContent = 'Copy'
      }, 2000)
    }
    var refused = function () {
      select(target)
      announce(label + ' selected: press Control+C, or Command+C, to copy it')
    }
    if (window.navigator.clipboard && window.isSecureContext) {
      window.navigator.clipboard.writeText(target.textContent.trim()).then(done, refused)
    } else {
      refused()
    }
  }

  var buttons = document.querySelectorAll('button[data-copy]')
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].hidden = false
    buttons[i].addEventListener('click', function (event) {
      copy(event.currentTarget)
    })
  }
})()
