import { FairQueue } from './fair-queue';

/** Takes everything, marking each item done at once (one worker serving items one after the other). */
function drainInOrder(queue: FairQueue<string>): string[] {
  const order: string[] = [];
  for (let item = queue.take(); item !== undefined; item = queue.take()) {
    order.push(item);
    queue.done(item.split(':')[0]);
  }
  return order;
}

describe('FairQueue', () => {
  it('serves one tenant in the order it queued', () => {
    const queue = new FairQueue<string>();
    for (const n of [1, 2, 3]) queue.push('a', `a:${n}`);
    expect(queue.size).toBe(3);
    expect(drainInOrder(queue)).toEqual(['a:1', 'a:2', 'a:3']);
    expect(queue.size).toBe(0);
  });

  it('takes tenants in turn: a late tenant waits behind one item of another, not behind all of them', () => {
    const queue = new FairQueue<string>();
    for (let n = 1; n <= 20; n++) queue.push('noisy', `noisy:${n}`);
    queue.push('quiet', 'quiet:1');
    queue.push('other', 'other:1');
    queue.push('quiet', 'quiet:2');
    expect(drainInOrder(queue).slice(0, 6)).toEqual([
      'noisy:1',
      'quiet:1',
      'other:1',
      'noisy:2',
      'quiet:2',
      'noisy:3',
    ]);
  });

  it('gives a free worker to the tenant served least now: one holding every worker comes after one holding none', () => {
    const queue = new FairQueue<string>();
    // The noisy tenant holds both workers and queues more; a quiet tenant arrives after it.
    queue.started('noisy');
    queue.started('noisy');
    queue.push('noisy', 'noisy:3');
    queue.push('quiet', 'quiet:1');
    queue.done('noisy');
    expect(queue.take()).toBe('quiet:1');
    expect(queue.servingOf('quiet')).toBe(1);
    expect(queue.servingOf('noisy')).toBe(1);
    // Equally served now (one each): the noisy tenant's turn.
    queue.done('quiet');
    expect(queue.take()).toBe('noisy:3');
    expect(queue.servingOf('noisy')).toBe(2);
  });

  it('drains what waits without counting it as served', () => {
    const queue = new FairQueue<string>();
    queue.push('a', 'a:1');
    queue.push('b', 'b:1');
    expect(queue.drain().sort()).toEqual(['a:1', 'b:1']);
    expect(queue.size).toBe(0);
    expect(queue.take()).toBeUndefined();
    expect(queue.servingOf('a')).toBe(0);
  });
});
