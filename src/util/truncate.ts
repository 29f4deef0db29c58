// Shortening text quoted back in error messages without splitting a character.

/**
 * `text` when it has at most `max` UTF-16 units; else its first `max - 3` units and `...`, one fewer when the cut
 * would split a surrogate pair (an emoji, say), so the message is never invalid UTF-16.
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 3;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}...`;
}
