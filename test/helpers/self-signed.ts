// A self-signed certificate for one test run, valid for the addresses the clients dial (localhost, 127.0.0.1).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface SelfSigned {
  certPath: string;
  keyPath: string;
}

/** Writes `cert.pem` and `key.pem` (RSA 2048, one day) into `dir` with the openssl command. */
export async function makeSelfSigned(dir: string): Promise<SelfSigned> {
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-days',
    '1',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  return { certPath, keyPath };
}
