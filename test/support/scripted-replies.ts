/**
 * Each test takes the model replies it scripts. A reply a test enqueues and no request takes stays first in the shared
 * queue of its file's model server, and the next test's run gets it instead of its own script: a failure far from its
 * cause, and only when timing leaves the reply behind (an abort that lands before the model request, say). After
 * each integration test this empties every open model server's queue and fails the test that left replies there.
 */
import { afterEach } from 'vitest';
import { openModelServers } from './model-server';

afterEach(() => {
  const left = openModelServers().flatMap((server) => server.drainQueue());
  if (left.length === 0) return;
  throw new Error(
    `This test left ${left.length} scripted model ${left.length === 1 ? 'reply' : 'replies'} that no request took ` +
      `(${JSON.stringify(left).slice(0, 300)}). Wait for the model requests (model.waitForRequests) before the test ` +
      'moves on, or enqueue only the replies its runs ask for.',
  );
});
