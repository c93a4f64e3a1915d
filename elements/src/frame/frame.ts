/**
 * The script of every vault frame (/elements/v1/frame.html): the invisible controller of an `init`, or
 * a field element. It does nothing unless the embedding page is of one of the application's allowed
 * origins (context.ts).
 */
import { frameContext } from './context';
import { runController } from './controller';
import { runField } from './field';

const ctx = frameContext();
if (ctx) {
  // The page asks again when it missed the first hello.
  ctx.onMessage((message) => {
    if (message.type === 'ping') ctx.post('hello');
  });
  if (ctx.kind === 'controller') runController(ctx);
  else runField(ctx, ctx.kind);
}
