import { IsISO8601, IsOptional, IsString, Length } from 'class-validator';
import type { AccessRuleDto } from '../../../common/auth/access-rule.dto';
import { GrantField, GrantsDto } from '../../../common/auth/grants.dto';

export class CreateSessionResponseDto {
  /** The key for calls made through the session; it has no access until a private application authorizes it. */
  session_key: string;

  /** One-time code a private application passes to `POST /sessions/authorize`. */
  nonce: string;

  /** When the session stops working: 3 minutes after creation unless authorization sets another time. */
  expires_at: string;
}

export class AuthorizeSessionDto extends GrantsDto {
  /** The nonce returned when the session was created; it can be used once. */
  @IsString()
  @Length(1, 200)
  nonce: string;

  /** Permissions granted on every container; never more than the authorizing application holds. */
  @GrantField()
  declare permissions?: string[];

  /** Access rules; session rules may use `conditions` on the token's `id`, `type` or `container`. */
  @GrantField()
  declare rules?: AccessRuleDto[];

  /** When the session is deleted: in the future and at most 24 hours after its creation. */
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true }, { message: 'expires_at must be an ISO 8601 date-time' })
  expires_at?: string;
}
