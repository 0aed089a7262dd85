/**
 * A throwaway PostgreSQL cluster on a free loopback port, from Debian's `postgresql` package (`initdb` and
 * `postgres` in /usr/lib/postgresql/<version>/bin): the database of the production Temporal server in tests and the
 * chaos harness. PostgreSQL refuses to run as root, so as root (CI) the cluster belongs to the `postgres` system
 * user the package creates. No test-runner imports: the chaos harness uses it too.
 *
 * @example
 * const pg = await startPostgres();   // superuser temporal / temporal, password auth over TCP
 * // ... POSTGRES_SEEDS=pg.host DB_PORT=pg.port ...
 * await pg.stop();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../../worker/dev-server';
import { isExecutableFile } from '../../worker/go-build';
import { runCommand } from './run-command';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 20_000;
const POSTGRES_BIN_ROOT = '/usr/lib/postgresql';

export interface PostgresServer {
  host: string;
  port: number;
  /** A superuser, like the `postgres` image's POSTGRES_USER. */
  user: string;
  password: string;
  /** Fast shutdown (SIGINT), then removes the cluster's files. */
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Default `temporal` / `temporal`, as in docker-compose.yml. */
  user?: string;
  password?: string;
  /** Receives PostgreSQL's log lines (warnings and above). */
  log?: (line: string) => void;
}

/** Initializes a cluster in a new temp folder and starts `postgres` on it; resolves once it accepts connections. */
export async function startPostgres(opts: StartPostgresOptions = {}): Promise<PostgresServer> {
  const user = opts.user ?? 'temporal';
  const password = opts.password ?? 'temporal';
  const bin = await findPostgresBin();
  const owner = process.getuid?.() === 0 ? await systemUser('postgres') : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'threadline-postgres-'));
  const dataDir = join(dir, 'data');
  const passwordFile = join(dir, 'password');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (owner) {
    await chown(dir, owner.uid, owner.gid);
    await chown(passwordFile, owner.uid, owner.gid);
  }
  // C locale and UTF-8: the same sort order and encoding on every machine; scram-sha-256 as the image uses.
  await runCommand(
    join(bin, 'initdb'),
    ['-D', dataDir, '-U', user, `--pwfile=${passwordFile}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C'],
    owner,
  );
  await rm(passwordFile);

  const port = await freePort();
  const args = ['-D', dataDir, '-p', String(port), '-c', `listen_addresses=${HOST}`, '-k', dir];
  // The chaos harness and the test suite open a few hundred connections between them (Temporal: 30 per server).
  args.push('-c', 'max_connections=200', '-c', 'log_min_messages=warning');
  const child = spawn(join(bin, 'postgres'), args, { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  let ready = false;
  let onReady: () => void = () => undefined;
  const readyLine = new Promise<void>((resolve) => (onReady = resolve));
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (/database system is ready to accept connections/.test(line)) onReady();
      else if (ready) opts.log?.(line);
    });
  }
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(err.message));
    child.once('close', (code, signal) => resolve(signal ?? `exit code ${code}`));
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    ready = false; // Shutdown logs a few LOG lines that mean nothing to the reader.
    process.off('exit', killOnExit);
    await stopChild(child, exited);
    await rm(dir, { recursive: true, force: true });
  };

  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      readyLine,
      exited.then((reason) => {
        throw new Error(`PostgreSQL exited during start-up (${reason}). Its output:\n${tail.join('\n')}`);
      }),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`PostgreSQL was not ready within ${READY_TIMEOUT_MS / 1000}s:\n${tail.join('\n')}`)),
          READY_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  ready = true;
  return { host: HOST, port, user, password, stop };
}

/** `POSTGRES_BIN_DIR`, else the newest /usr/lib/postgresql/<version>/bin with `initdb` in it. */
async function findPostgresBin(): Promise<string> {
  const override = process.env.POSTGRES_BIN_DIR;
  if (override) {
    if (await isExecutableFile(join(override, 'initdb'))) return override;
    throw new Error(
      `POSTGRES_BIN_DIR is set to "${override}", but it has no initdb. Point it at PostgreSQL's bin folder.`,
    );
  }
  const versions = await readdir(POSTGRES_BIN_ROOT).catch(() => [] as string[]);
  for (const version of versions.sort((a, b) => Number(b) - Number(a))) {
    const bin = join(POSTGRES_BIN_ROOT, version, 'bin');
    if (await isExecutableFile(join(bin, 'initdb'))) return bin;
  }
  throw new Error(
    `PostgreSQL's server programs were not found (no ${POSTGRES_BIN_ROOT}/<version>/bin/initdb). Install them ` +
      '(Debian/Ubuntu: `apt-get install postgresql`) or set POSTGRES_BIN_DIR to the folder holding initdb and postgres.',
  );
}

/** The uid and gid of a user from /etc/passwd. */
async function systemUser(name: string): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  const fields = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .find((entry) => entry[0] === name);
  if (!fields) {
    throw new Error(
      `PostgreSQL does not run as root, and there is no "${name}" user to run it as. ` +
        "Installing Debian's postgresql package creates it; or run the tests as a user other than root.",
    );
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  // SIGINT: PostgreSQL's fast shutdown (ends sessions, checkpoints, exits).
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
