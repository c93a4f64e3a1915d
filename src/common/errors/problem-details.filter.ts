import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { PinoLogger } from 'nestjs-pino';
import { traceIdOf } from '../context/trace-id';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem-details';

/** The single exception filter: everything leaves the service as RFC 9457 problem+json. */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  constructor(private readonly logger: PinoLogger) {
    logger.setContext('ProblemDetailsFilter');
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const traceId = traceIdOf(req);
    const { body, headers, unexpected } = toProblem(exception, traceId);
    if (unexpected) {
      this.logger.error(
        // The request's logger carries its trace_id already.
        { err: exception },
        'unexpected error while serving %s %s',
        req.method,
        req.path,
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
  }
}
