import { All, applyDecorators, Controller, Req, Res, UseFilters } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiExtension,
  ApiHeader,
  ApiOperation,
  ApiResponse,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { RequirePermissions, API_KEY_SECURITY } from '../../common/auth/require-permissions.decorator';
import { ANY_METHOD_EXTENSION } from '../../common/openapi';
import { NeverReplayed } from '../../common/context/never-replayed.decorator';
import { problemContent } from '../../common/errors/problem-details.dto';
import { copyDestinationHeaders } from './proxy-answer-headers';
import { ProxyErrorFilter, PROXY_ERROR_HEADER } from './proxy-error.filter';
import { ProxyRequestService } from './proxy-request.service';

const DESCRIPTION =
  'Sends the request (same method, body, headers and query string; `/proxy/<path>` appends `<path>`) to ' +
  '`BT-PROXY-URL`, or to the destination of the pre-configured proxy named by `BT-PROXY-KEY`, after ' +
  "replacing token expressions (`{{ <token id> }}`, `{{ token: <id> | json: '$.number' }}`) in the body, the " +
  'query string and the headers by the data the key may use (`token:use` on every token named). `BT-*` ' +
  'headers are not forwarded; `BT-IDEMPOTENCY-KEY` is ignored. Once detokenized, the body may be at most ' +
  '10 MiB, each header value 16 KiB and the query string 8 KiB (sizes computed before anything is built; ' +
  'over them, a 400 `request_too_large`). The path after `/proxy` stays under the destination: `\\`, an ' +
  'encoded `/` or `\\`, and dot segments in any encoding are refused. ' +
  "The destination's status, headers and body come back as they are (redirects are returned, not " +
  "followed), except its `Set-Cookie`, its security, CORS and `BT-*` headers: every answer carries the service's " +
  "`Content-Security-Policy: default-src 'none'; frame-ancestors 'none'` and `X-Content-Type-Options: nosniff`. " +
  'Errors of the proxy itself are problem+json with `BT-PROXY-ERROR: true`.';

/** The OpenAPI description shared by every method of the proxy (it takes any body and answers anything). */
const ProxyOperation = () =>
  applyDecorators(
    RequirePermissions([], { public: true, keyOptional: true }),
    NeverReplayed(),
    UseFilters(ProxyErrorFilter),
    ApiOperation({ summary: 'Send a request through the proxy', description: DESCRIPTION }),
    ApiExtension(ANY_METHOD_EXTENSION, 'proxy'),
    ApiSecurity(API_KEY_SECURITY),
    ApiSecurity({}),
    ApiHeader({
      name: 'BT-PROXY-URL',
      required: false,
      description:
        'Absolute http(s) URL of the destination (the ephemeral proxy); needs a private or session key.',
    }),
    ApiHeader({
      name: 'BT-PROXY-KEY',
      required: false,
      description:
        'Key of a pre-configured proxy; a BT-API-KEY is needed unless it was created with require_auth false. ' +
        'A BT-API-KEY given is always checked (401 when it is not a valid key) and the request counts against ' +
        "it; without one, against the proxy key's rate limit.",
    }),
    ApiConsumes('*/*'),
    ApiBody({ required: false, description: 'Any body; token expressions in it are replaced.', schema: {} }),
    ApiResponse({
      status: 200,
      description: "The destination's answer, whatever its status: status, headers and body as it sent them.",
      content: { '*/*': { schema: {} } },
    }),
    ApiResponse({
      status: 400,
      description:
        'Neither or both of BT-PROXY-URL and BT-PROXY-KEY, a malformed or refused destination ' +
        '(`destination_not_allowed`), a path leaving the destination, an expression naming a token that does ' +
        'not exist or that the key may not use, or a request over its limits once detokenized (`request_too_large`).',
      content: problemContent(),
    }),
    ApiResponse({
      status: 401,
      description: 'A key is needed and BT-API-KEY is missing or invalid.',
      content: problemContent(),
    }),
    ApiResponse({
      status: 403,
      description: 'The key is not a private or authorized session key.',
      content: problemContent(),
    }),
    ApiResponse({
      status: 404,
      description: 'No proxy has the BT-PROXY-KEY given.',
      content: problemContent(),
    }),
    ApiResponse({
      status: 502,
      description: 'The destination is unreachable, or its answer is over 10 MiB.',
      content: problemContent(),
    }),
    ApiResponse({
      status: 504,
      description: 'The destination did not answer within PROXY_TIMEOUT_MS.',
      content: problemContent(),
    }),
  );

@ApiTags('Proxy')
@Controller()
export class ProxyRequestController {
  constructor(private readonly proxy: ProxyRequestService) {}

  /** Every method, at `/proxy` and below. */
  @All(['proxy', 'proxy/*path'])
  @ProxyOperation()
  async forward(@Req() req: Request, @Res() res: Response): Promise<void> {
    const original = req.originalUrl;
    const queryAt = original.indexOf('?');
    const pathname = queryAt === -1 ? original : original.slice(0, queryAt);
    const answer = await this.proxy.forward({
      method: req.method,
      path: pathname.slice('/proxy'.length),
      query: queryAt === -1 ? '' : original.slice(queryAt + 1),
      headers: req.headers,
      body: Buffer.isBuffer(req.body) ? req.body : undefined,
      http: req,
    });
    res.removeHeader(PROXY_ERROR_HEADER);
    copyDestinationHeaders(res, answer.headers, req.method);
    res.status(answer.status).end(answer.body);
  }
}
