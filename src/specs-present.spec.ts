import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every service and every controller has a spec beside it (`x.service.ts` and `x.service.spec.ts`): the
 * service tier runs it on the real SQL, the controller tier checks what each route hands its service.
 */
describe('every service and controller has a spec', () => {
  const files = readdirSync(__dirname, { recursive: true, encoding: 'utf8' });
  const specified = files.filter((file) => /\.(service|controller)\.ts$/.test(file));

  it('finds the services and controllers', () => {
    expect(specified.length).toBeGreaterThan(50);
  });

  it.each(specified)('%s', (file) => {
    expect(existsSync(join(__dirname, file.replace(/\.ts$/, '.spec.ts')))).toBe(true);
  });
});
