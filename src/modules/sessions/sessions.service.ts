import { ValidationException } from '../../common/errors/domain.exception';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AccessRule } from '../../common/auth/access-rule';
import { BASE62, generateApiKey, hashApiKey } from '../../common/auth/api-key';
import { checkGrants, escalations } from '../../common/auth/grants';
import { addFieldError, FieldErrors } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { RetentionJob } from '../../common/jobs/retention.job';
import type { RequestOrigin } from '../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../common/unit-of-work/unit-of-work';
import { LOCK_KEYS } from '../../database/data-source';
import { AuthorizeSessionDto, CreateSessionResponseDto } from './dto/session.dto';
import { SessionsRepository } from './sessions.repository';

export const SESSION_LIFETIME_MS = 3 * 60_000;
export const MAX_SESSION_LIFETIME_MS = 24 * 60 * 60_000;

/**
 * Sessions: created by a public application, authorized by a private one. Each write is one change
 * carrying its audit row (`Session created`, `Session authorized with ...`).
 */
@Injectable()
export class SessionsService implements OnModuleInit {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionsRepository,
    private readonly clock: Clock,
    private readonly retention: RetentionJob,
  ) {}

  /** Sessions past `expires_at` are deleted every minute (one set-based statement). */
  onModuleInit(): void {
    this.retention.register({
      name: 'expired-sessions',
      lockKey: LOCK_KEYS.jobExpiredSessions,
      periodMs: 60_000,
      purge: (change, now) => this.sessions.deleteExpired(change, now),
    });
  }

  /** A new session without access; the key and nonce are returned once and stored as digests. */
  async create(origin: RequestOrigin): Promise<CreateSessionResponseDto & { id: string }> {
    const who = origin.actor;
    return this.work.transaction(origin, async (change) => {
      const id = randomUUID();
      const sessionKey = generateApiKey('session');
      const nonce = BASE62.encode(randomBytes(24));
      const now = this.clock.now();
      const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_MS);
      await this.sessions.insert(change, {
        id,
        tenantId: who.tenantId,
        applicationId: who.applicationId,
        keyHash: hashApiKey(sessionKey),
        nonceHash: hashApiKey(nonce),
        expiresAt,
        createdAt: now,
      });
      change.audit({ entityType: 'session', entityId: id, operation: 'create', message: 'Session created' });
      return { id, session_key: sessionKey, nonce, expires_at: expiresAt.toISOString() };
    });
  }

  /**
   * Grants permissions and rules to the session holding `nonce`. The nonce is consumed by the same
   * UPDATE that grants, so two concurrent authorizations cannot both succeed.
   */
  async authorize(origin: RequestOrigin, body: AuthorizeSessionDto): Promise<{ id: string }> {
    const who = origin.actor;
    const permissions = body.permissions ?? [];
    const rules = (body.rules ?? []) as AccessRule[];
    // Checked before the change opens: a refused grant costs no round trip.
    const errors: FieldErrors = checkGrants('private', permissions, rules, { allowConditions: true });
    if (permissions.length === 0 && rules.length === 0)
      addFieldError(errors, 'permissions', 'at least one of permissions and rules must be granted');
    for (const [path, messages] of Object.entries(escalations(who, permissions, rules)))
      if (!errors[path]) errors[path] = messages;
    if (Object.keys(errors).length) throw new ValidationException(errors);

    return this.work.transaction(origin, async (change) => {
      const now = this.clock.now();
      const session = await this.sessions.lockPendingByNonce(
        change,
        who.tenantId,
        hashApiKey(body.nonce),
        now,
      );
      if (!session)
        throw new ValidationException({ nonce: ['the nonce is unknown, expired or already used'] });
      let expiresAt = session.expiresAt;
      if (body.expires_at !== undefined) {
        expiresAt = new Date(body.expires_at);
        const latest = session.createdAt.getTime() + MAX_SESSION_LIFETIME_MS;
        if (expiresAt.getTime() <= now.getTime())
          throw new ValidationException({ expires_at: ['expires_at must be in the future'] });
        if (expiresAt.getTime() > latest)
          throw new ValidationException({
            expires_at: [
              `expires_at must be at most 24 hours after the session was created (${new Date(latest).toISOString()})`,
            ],
          });
      }
      await this.sessions.authorize(change, who.tenantId, session.id, {
        permissions,
        rules,
        authorizedBy: who.applicationId,
        authorizedAt: now,
        expiresAt,
      });
      const granted = [
        permissions.length ? `permissions ${permissions.join(', ')}` : '',
        rules.length ? `${rules.length} rule${rules.length > 1 ? 's' : ''}` : '',
      ].filter(Boolean);
      change.audit({
        entityType: 'session',
        entityId: session.id,
        operation: 'update',
        message: `Session authorized with ${granted.join(' and ')}`,
      });
      return { id: session.id };
    });
  }
}
