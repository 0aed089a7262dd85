import { spawn, type ChildProcess } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from '../../worker/dev-server';

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /**
   * Stops the server (SIGTERM) and starts it again on the same port: empty, or with its data back when started with
   * `persist`.
   */
  restart(): Promise<void>;
  /**
   * SIGKILLs the server and starts it again on the same port with none of its data (its files removed first, so an
   * append-only file does not bring it back): a Redis without persistence that crashed, or one whose disk was lost.
   */
  restartEmpty(): Promise<void>;
  /** Stops the server and keeps its port until `up()`: Redis unreachable, for as long as a test needs. */
  down(): Promise<void>;
  /** After `down()`: starts a fresh (empty) server on the same port. */
  up(): Promise<void>;
}

export interface RedisOptions {
  /**
   * Keep the data across `restart()`, as a production Redis with persistence does: an append-only file, written on
   * every command, in the server's temp dir. Default false: nothing is persisted.
   */
  persist?: boolean;
}

/** Starts a throwaway `redis-server` on a free loopback port, with a temp dir of its own (persistence off by default). */
export async function startRedis(opts: RedisOptions = {}): Promise<RedisServer> {
  const bin = await findOnPath('redis-server');
  const dir = await mkdtemp(join(tmpdir(), 'threadline-redis-'));
  const port = await freePort();
  const persistence = opts.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  let server = await launch(bin, port, dir, persistence);
  const killOnExit = () => server.process.kill('SIGKILL');
  process.once('exit', killOnExit);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      process.off('exit', killOnExit);
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
    async restart() {
      await server.stop();
      server = await launch(bin, port, dir, persistence);
    },
    async restartEmpty() {
      await server.stop('SIGKILL');
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      server = await launch(bin, port, dir, persistence);
    },
    async down() {
      await server.stop();
    },
    async up() {
      server = await launch(bin, port, dir, persistence);
    },
  };
}

interface Launched {
  process: ChildProcess;
  /** SIGTERM (Redis writes its append-only file and exits; SIGKILL after 5 s), or SIGKILL at once. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

async function launch(bin: string, port: number, dir: string, persistence: string[]): Promise<Launched> {
  const child = spawn(
    bin,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
  };
  // Generous: on a loaded machine a redis-server that is up within a second of its own clock can take longer to be
  // spawned and to answer (a chaos run at load average 40 once missed a 10 s deadline and lost Redis for good).
  const deadline = Date.now() + 60_000;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not come up on 127.0.0.1:${port}. Its output:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { process: child, stop };
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

async function findOnPath(name: string): Promise<string> {
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(
    `${name} was not found on PATH. Install it (Debian/Ubuntu: \`apt-get install redis-server\`) and run the tests again.`,
  );
}
