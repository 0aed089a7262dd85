/**
 * The chaos harness's command line: `npm run chaos -- --minutes 2 --threads 200 --temporal production --seed 7
 * --report CHAOS.md`. Bad input is refused with a message that names the flag and what it takes.
 */
export interface ChaosOptions {
  /** How long the load and the faults run. */
  minutes: number;
  /** Threads driven at once. */
  threads: number;
  /** Inputs per second, over all threads (each thread waits around `threads / rate` seconds between inputs). */
  rate: number;
  /** `production`: the Temporal server on PostgreSQL, killed and restarted; `dev`: the embedded dev server, not killed. */
  temporal: 'production' | 'dev';
  seed: number;
  /** Write the Markdown report here (e.g. `CHAOS.md`). */
  report?: string;
  /** Every thread must be idle this long after the load stops, at the latest. */
  idleBoundSeconds: number;
  /** A worker is SIGKILLed about this often (±1/3), and started again at once. */
  workerKillEverySeconds: number;
  /** Worker processes; a worker is killed only while another one serves. */
  workers: number;
  /**
   * Threads created through gateway 2 continue as new after this many history events (0: the default, 4,000),
   * so executions roll over while workers die.
   */
  rolloverEvents: number;
  /** ... and after this many updates, or this many signals (0: the defaults, 1,000 and 5,000). */
  rolloverUpdates: number;
}

export const usage = `Usage: npm run chaos -- [--minutes N] [--threads N] [--rate N] [--temporal production|dev]
                       [--seed N] [--report FILE] [--idle-bound SECONDS] [--worker-kill-every SECONDS]
                       [--workers N] [--rollover-events N] [--rollover-updates N]

  --minutes            how long load and faults run (default 2)
  --threads            threads driven at once, through both gateways (default 200)
  --rate               inputs per second over all threads (default 5)
  --temporal           production: Temporal server on PostgreSQL, SIGKILLed and restarted (default);
                       dev: the embedded dev server (never killed)
  --seed               seed of the load and the fault schedule (default: from the clock, printed)
  --report             write the Markdown report to this file (e.g. CHAOS.md)
  --idle-bound         seconds after the load stops by which every thread must be idle (default 300)
  --worker-kill-every  a worker is SIGKILLed about this often (±1/3), in seconds, and started again at once
                       (default 4.5: every 3–6 s)
  --workers            worker processes, at least 2; one is killed only while another serves (default 3)
  --rollover-events    threads created through gateway 2 continue as new after this many history events
                       (default 60; 0: the product default, 4,000)
  --rollover-updates   ... and after this many updates, or as many signals (default 2; 0: the product
                       defaults, 1,000 and 5,000)`;

export class ChaosUsageError extends Error {
  override name = 'ChaosUsageError';
}

export function parseOptions(argv: readonly string[]): ChaosOptions {
  const options: ChaosOptions = {
    minutes: 2,
    threads: 200,
    rate: 5,
    temporal: 'production',
    seed: Date.now() % 2 ** 31,
    idleBoundSeconds: 300,
    workerKillEverySeconds: 4.5,
    workers: 3,
    rolloverEvents: 60,
    rolloverUpdates: 2,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    const takeValue = (): string => {
      if (value === undefined || value.startsWith('--')) throw new ChaosUsageError(`${flag} needs a value.\n${usage}`);
      i++;
      return value;
    };
    const positive = (max: number): number => {
      const text = takeValue();
      const n = Number(text);
      if (!Number.isFinite(n) || n <= 0 || n > max) {
        throw new ChaosUsageError(`Invalid ${flag}: "${text}". Use a number above 0 and at most ${max}.`);
      }
      return n;
    };
    switch (flag) {
      case '--minutes':
        options.minutes = positive(24 * 60);
        break;
      case '--threads':
        options.threads = Math.round(positive(10_000));
        break;
      case '--rate':
        options.rate = positive(10_000);
        break;
      case '--temporal': {
        const kind = takeValue();
        if (kind !== 'production' && kind !== 'dev') {
          throw new ChaosUsageError(`Invalid --temporal: "${kind}". Use production or dev.`);
        }
        options.temporal = kind;
        break;
      }
      case '--seed': {
        const text = takeValue();
        if (!/^\d{1,10}$/.test(text)) throw new ChaosUsageError(`Invalid --seed: "${text}". Use a whole number.`);
        options.seed = Number(text) % 2 ** 32;
        break;
      }
      case '--report':
        options.report = takeValue();
        break;
      case '--idle-bound':
        options.idleBoundSeconds = positive(24 * 3600);
        break;
      case '--worker-kill-every':
        options.workerKillEverySeconds = positive(3600);
        break;
      case '--workers': {
        const n = positive(16);
        if (!Number.isInteger(n) || n < 2) {
          throw new ChaosUsageError(
            `Invalid --workers: "${n}". Use a whole number from 2 to 16 (one serves while one dies).`,
          );
        }
        options.workers = n;
        break;
      }
      case '--rollover-events':
      case '--rollover-updates': {
        const text = takeValue();
        const n = Number(text);
        const min = flag === '--rollover-events' ? 20 : 1;
        if (!Number.isInteger(n) || (n !== 0 && (n < min || n > 100_000))) {
          throw new ChaosUsageError(
            `Invalid ${flag}: "${text}". Use 0 (the default of threads) or a whole number from ${min} to 100000.`,
          );
        }
        if (flag === '--rollover-events') options.rolloverEvents = n;
        else options.rolloverUpdates = n;
        break;
      }
      case '--help':
      case '-h':
        throw new ChaosUsageError(usage);
      default:
        throw new ChaosUsageError(`Unknown option "${flag}".\n${usage}`);
    }
  }
  return options;
}
