import { ArgumentsHost, Catch } from '@nestjs/common';
import type { Response } from 'express';
import { ProblemDetailsFilter } from '../../common/errors/problem-details.filter';

export const PROXY_ERROR_HEADER = 'BT-PROXY-ERROR';

/**
 * Every error the proxy answers itself (as opposed to the destination's own answers) carries
 * `BT-PROXY-ERROR: true`, so that a client can tell the two apart.
 */
@Catch()
export class ProxyErrorFilter extends ProblemDetailsFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (!res.headersSent) res.setHeader(PROXY_ERROR_HEADER, 'true');
    super.catch(exception, host);
  }
}
