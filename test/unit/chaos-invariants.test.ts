/**
 * The chaos harness's checker must catch what it claims to: a lost, duplicated or misrouted input, a subscriber
 * that skipped or repeated an event, a declined tool that ran. (The harness itself: `npm run chaos`, docs/chaos.md.)
 */
import { describe, expect, it } from 'vitest';
import {
  checkInputs,
  checkNotifications,
  checkSubscriber,
  checkTools,
  compareEventIds,
  type InputRecord,
} from '../chaos/invariants';

const input = (over: Partial<InputRecord>): InputRecord => ({
  id: 'i1',
  thread: 'r/t',
  route: 'send-message',
  outcome: 'accepted',
  action: 'wake',
  runId: 'run-1',
  freshAnswers: 1,
  attempts: 1,
  sentAt: 0,
  ...over,
});

describe('checkInputs', () => {
  it('passes inputs stored once in the run their answer named, and discarded ones not stored', () => {
    const records = [
      input({ id: 'a' }),
      input({ id: 'b', action: 'persist', runId: undefined }),
      input({ id: 'c', action: 'discard', runId: undefined }),
      input({ id: 'd', outcome: 'unknown', action: undefined }),
      input({ id: 'e', outcome: 'refused', action: undefined }),
    ];
    const stored = new Map([['r/t', [{ id: 'a', runId: 'run-1' }, { id: 'b' }]]]);
    expect(checkInputs(records, stored, new Set())).toEqual({ lost: [], duplicated: [], mishandled: [] });
  });

  it('finds a lost input, a stored twice, an answered twice, a discarded one stored and a wrong run', () => {
    const records = [
      input({ id: 'lost', action: 'deliver' }),
      input({ id: 'twice' }),
      input({ id: 'answered-twice', freshAnswers: 2 }),
      input({ id: 'discarded', action: 'discard', runId: undefined }),
      input({ id: 'wrong-run', action: 'queued', runId: 'run-2' }),
      input({ id: 'persisted', action: 'persist', runId: undefined }),
    ];
    const stored = new Map([
      [
        'r/t',
        [
          { id: 'twice', runId: 'run-1' },
          { id: 'twice', runId: 'run-1' },
          { id: 'answered-twice', runId: 'run-1' },
          { id: 'discarded' },
          { id: 'wrong-run', runId: 'run-3' },
          { id: 'persisted', runId: 'run-1' },
        ],
      ],
    ]);
    const findings = checkInputs(records, stored, new Set());
    expect(findings.lost).toEqual([expect.stringContaining('input lost')]);
    expect(findings.duplicated).toEqual([
      expect.stringContaining('input twice'),
      expect.stringContaining('input answered-twice'),
    ]);
    expect(findings.mishandled).toHaveLength(3);
  });

  it('lets a run that ended with an abort or error hand its waiting input to the next run', () => {
    const records = [input({ id: 'a', action: 'deliver', runId: 'run-1' })];
    const stored = new Map([['r/t', [{ id: 'a', runId: 'run-2' }]]]);
    expect(checkInputs(records, stored, new Set(['run-1'])).mishandled).toEqual([]);
    expect(checkInputs(records, stored, new Set()).mishandled).toHaveLength(1);
  });
});

describe('checkSubscriber', () => {
  const stream = ['1-0', '1-1', '2-0', '3-0', '4-0', '5-0'];

  it('passes connections that resume right after their Last-Event-ID', () => {
    const segments = [
      {
        items: [
          { id: '1-1', type: 'start' },
          { id: '2-0', type: 'text-delta' },
        ],
      },
      { resumeFrom: '2-0', items: [] },
      {
        resumeFrom: '2-0',
        items: [
          { id: '3-0', type: 'text-delta' },
          { id: '4-0', type: 'finish' },
        ],
      },
    ];
    expect(checkSubscriber('r/t', segments, stream)).toEqual([]);
  });

  it('finds a skipped event, a repeated one, and a resume that starts late', () => {
    expect(
      checkSubscriber(
        'r/t',
        [
          {
            items: [
              { id: '1-0', type: 'start' },
              { id: '2-0', type: 'x' },
            ],
          },
        ],
        stream,
      ),
    ).toEqual([expect.stringContaining('missed 1 event(s) before 2-0 (1-1)')]);
    expect(
      checkSubscriber(
        'r/t',
        [{ items: [{ id: '1-0', type: 'start' }] }, { resumeFrom: '1-0', items: [{ id: '1-0', type: 'start' }] }],
        stream,
      ),
    ).toEqual([expect.stringContaining('seen twice or out of order')]);
    expect(
      checkSubscriber(
        'r/t',
        [{ items: [{ id: '1-0', type: 'a' }] }, { resumeFrom: '1-0', items: [{ id: '3-0', type: 'b' }] }],
        stream,
      ),
    ).toEqual([expect.stringContaining('missed 2 event(s) before 3-0')]);
  });

  it('accepts a snapshot after a resume from a trimmed id or mid-connection, not in a connection without a position', () => {
    const trimmed = ['4-0', '5-0'];
    const ok = [
      {
        resumeFrom: '2-0',
        items: [
          { id: '2-0', type: 'snapshot' },
          { id: '4-0', type: 'start' },
        ],
      },
    ];
    expect(checkSubscriber('r/t', ok, trimmed)).toEqual([]);
    const fresh = [{ items: [{ id: '0', type: 'snapshot' }] }];
    expect(checkSubscriber('r/t', fresh, trimmed)).toEqual([expect.stringContaining('resumed from nothing')]);
  });

  it('across a stream Redis lost: a snapshot then the new stream is fine, going on without one is a silent hole', () => {
    // Redis held 1-0..3-0, lost them (recorded just before), then held 7-0, 8-0.
    const overTheRun = ['1-0', '2-0', '3-0', '7-0', '8-0'];
    const withSnapshot = [
      {
        resumeFrom: '0-0',
        items: [
          { id: '1-0', type: 'start' },
          { id: '1-0', type: 'snapshot' },
          { id: '7-0', type: 'start' },
          { id: '8-0', type: 'finish' },
        ],
      },
    ];
    expect(checkSubscriber('r/t', withSnapshot, overTheRun)).toEqual([]);
    const silent = [
      { resumeFrom: '0-0', items: [{ id: '1-0', type: 'start' }] },
      { resumeFrom: '1-0', items: [{ id: '7-0', type: 'start' }] },
    ];
    expect(checkSubscriber('r/t', silent, overTheRun)).toEqual([
      expect.stringContaining('missed 2 event(s) before 7-0 (2-0, 3-0)'),
    ]);
  });

  it('names an event the bus never had', () => {
    expect(checkSubscriber('r/t', [{ items: [{ id: '9-0', type: 'x' }] }], stream)).toEqual([
      expect.stringContaining('9-0 (x) is not in the bus stream'),
    ]);
  });
});

describe('compareEventIds', () => {
  it('orders by milliseconds, then sequence, as numbers', () => {
    expect(compareEventIds('10-0', '9-5')).toBe(1);
    expect(compareEventIds('9-10', '9-9')).toBe(1);
    expect(compareEventIds('9-1', '9-1')).toBe(0);
    expect(compareEventIds('1718000000000-0', '1718000000001-0')).toBe(-1);
  });
});

describe('checkNotifications and checkTools', () => {
  it('finds a record answered but missing, one listed twice, and a declined tool call that ran', () => {
    const sends = [{ thread: 'r/t', key: 'n1', outcome: 'accepted' as const, ids: ['a', 'b', 'c'], freshAnswers: 1 }];
    const findings = checkNotifications(sends, new Map([['r/t', ['a', 'c', 'c']]]));
    expect(findings.lost).toEqual([expect.stringContaining('record b')]);
    expect(findings.duplicated).toEqual([expect.stringContaining('record c listed 2 times')]);

    const approvals = [
      { thread: 'r/t', toolCallId: 'x', approved: false, outcome: 'accepted' as const },
      { thread: 'r/t', toolCallId: 'y', approved: true, outcome: 'accepted' as const },
      { thread: 'r/t', toolCallId: 'z', approved: true, outcome: 'accepted' as const },
    ];
    const tools = checkTools(
      approvals,
      new Map([
        ['x', 1],
        ['y', 2],
      ]),
      new Set(),
    );
    expect(tools.ranWhenDeclined).toEqual([expect.stringContaining('tool call x')]);
    expect(tools.ranTwice).toEqual([expect.stringContaining('tool call y')]);
    expect(tools.neverRan).toEqual([expect.stringContaining('tool call z')]);
  });
});

describe('checkSubscriber from the start of the stream', () => {
  it('expects the first event of the stream after Last-Event-ID 0-0', () => {
    const stream = ['1-0', '2-0'];
    expect(checkSubscriber('r/t', [{ resumeFrom: '0-0', items: [{ id: '1-0', type: 'start' }] }], stream)).toEqual([]);
    expect(checkSubscriber('r/t', [{ resumeFrom: '0-0', items: [{ id: '2-0', type: 'x' }] }], stream)).toEqual([
      expect.stringContaining('missed 1 event(s) before 2-0'),
    ]);
  });
});
