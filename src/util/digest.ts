/**
 * A hex digest. node:crypto is loaded here, when something is hashed, not when cal starts: its
 * load costs about 5 ms of every start (measured), and most commands hash nothing.
 */
export function digestHex(algorithm: 'sha256' | 'md5', data: string | Buffer): string {
  return process.getBuiltinModule('node:crypto').createHash(algorithm).update(data).digest('hex');
}
