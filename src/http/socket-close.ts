// When a connection closes: one 'close' listener per socket, however many requests are pipelined on it.
import type { Socket } from 'node:net';

/** The requests in progress on each connection. */
const socketWatchers = new WeakMap<Socket, Set<() => void>>();

/** Calls `onClose` when the socket closes; returns the function that stops watching. */
export function onSocketClose(socket: Socket, onClose: () => void): () => void {
  let watchers = socketWatchers.get(socket);
  if (!watchers) {
    const set = new Set<() => void>();
    watchers = set;
    socketWatchers.set(socket, set);
    socket.once('close', () => {
      socketWatchers.delete(socket);
      for (const watcher of [...set]) watcher();
    });
  }
  watchers.add(onClose);
  return () => watchers.delete(onClose);
}
