import { expectProblem, TestApp } from '../support/app';
import { measureLoop, tokenize, scene } from '../support/attacker';

/**
 * Abuse class: expressions, the cases that measure the event loop and the heap while hostile expressions
 * are evaluated (the others: test/abuse/expressions.e2e-spec.ts). Their bounds (100 ms, 100 MB) hold on a
 * loaded machine, but they measure wall-clock time: they run in the timing project.
 */
describe('abuse: expressions hold the event loop briefly', () => {
  let t: TestApp;
  let pub: string;

  beforeAll(async () => {
    const s = await scene('expression-timing', {
      pub: { type: 'public', permissions: ['token:create', 'token:update'] },
    });
    t = s.t;
    ({ pub } = s.keys);
  });
  afterAll(() => t.close());

  it('the amplification expression (capture doubling in a for, then replace) is refused at once: the loop keeps turning, the heap stays small', async () => {
    const bomb =
      '{% capture s %}xx{% endcapture %}{% for i in (1..26) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}' +
      "{{ s | replace: 'x', 'yyyyyyyy' }}";
    const measured = await measureLoop(() =>
      tokenize(t, pub, { type: 'token', data: 'a', search_indexes: [bomb] }),
    );
    process.stdout.write(
      `amplification: ${measured.result.status} in ${measured.elapsedMs.toFixed(1)} ms, loop held ${measured.maxBlockMs.toFixed(1)} ms, heap +${measured.heapGrowthMb.toFixed(1)} MB\n`,
    );
    expectProblem(measured.result, 400);
    expect(measured.maxBlockMs).toBeLessThan(100);
    expect(measured.heapGrowthMb).toBeLessThan(100);
  });

  it('a tokenize of 100 hostile expressions never holds the event loop for 100 ms', async () => {
    const hostile = [
      '{{ data | split: "" | sort | reverse | join: "," | split: "," | uniq | join: "" }}',
      "{{ data | replace: 'a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }}",
      '{{ data | strip_html | escape | url_encode | base64_encode | sha256 }}',
      '{{ (1..100000000) | join }}',
      '{{ data | split: "a" | join: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" | size }}',
    ];
    const data = 'a<'.repeat(2000);
    const body = Array.from({ length: 100 }, (_, i) => ({
      type: 'token',
      data,
      search_indexes: [hostile[i % hostile.length]],
    }));
    const measured = await measureLoop(() => tokenize(t, pub, body));
    process.stdout.write(
      `100 hostile expressions: ${measured.result.status} in ${measured.elapsedMs.toFixed(1)} ms, loop held ${measured.maxBlockMs.toFixed(1)} ms, heap +${measured.heapGrowthMb.toFixed(1)} MB\n`,
    );
    expect(measured.result.status).toBe(400);
    expect(measured.maxBlockMs).toBeLessThan(100);
  });
});
