/**
 * A message as cal sends and records it, whatever the transport: a lone UTF-16 surrogate (a
 * string from a program, never from a command line, which is decoded from UTF-8) becomes U+FFFD.
 * Every CLI turned it into U+FFFD on its way in anyway (its pane, pipe or argv is UTF-8), so the
 * record of the message then differed from the text cal looked for; now they are the same text.
 */
export function wellFormedMessage(message: string): string {
  return message.replace(/\p{Cs}/gu, '\uFFFD');
}
