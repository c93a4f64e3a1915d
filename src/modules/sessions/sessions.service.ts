import { ValidationException } from '../../common/errors/domain.exception';
import { Transactional } from '../../common/context/transactional';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { AuditTrail } from '../../common/audit/audit-trail.service';
import type { AccessRule } from '../../common/auth/access-rule';
import { BASE62, generateApiKey, hashApiKey } from '../../common/auth/api-key';
import { checkGrants, escalations } from '../../common/auth/grants';
import type { Principal } from '../../common/auth/principal';
import { addFieldError, FieldErrors } from '../../common/errors/problem.exception';
import { Clock } from '../../common/jobs/clock';
import { RetentionJob } from '../../common/jobs/retention.job';
import { LOCK_KEYS } from '../../database/data-source';
import { AuthorizeSessionDto, CreateSessionResponseDto } from './dto/session.dto';
import { SessionsRepository } from './sessions.repository';

export const SESSION_LIFETIME_MS = 3 * 60_000;
export const MAX_SESSION_LIFETIME_MS = 24 * 60 * 60_000;

/** Sessions: created by a public application, authorized by a private one. */
@Injectable()
export class SessionsService implements OnModuleInit {
  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly sessions: SessionsRepository,
    private readonly clock: Clock,
    private readonly retention: RetentionJob,
    private readonly audit: AuditTrail,
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
  @Transactional()
  async create(who: Principal): Promise<CreateSessionResponseDto & { id: string }> {
    const id = randomUUID();
    const sessionKey = generateApiKey('session');
    const nonce = BASE62.encode(randomBytes(24));
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_MS);
    await this.sessions.insert({
      id,
      tenantId: who.tenantId,
      applicationId: who.applicationId,
      keyHash: hashApiKey(sessionKey),
      nonceHash: hashApiKey(nonce),
      expiresAt,
      createdAt: now,
    });
    this.audit.record({
      entityType: 'session',
      entityId: id,
      operation: 'create',
      message: 'Session created',
    });
    return { id, session_key: sessionKey, nonce, expires_at: expiresAt.toISOString() };
  }

  /**
   * Grants permissions and rules to the session holding `nonce`. The nonce is consumed by the same
   * UPDATE that grants, so two concurrent authorizations cannot both succeed.
   */
  @Transactional()
  async authorize(who: Principal, body: AuthorizeSessionDto): Promise<{ id: string }> {
    const permissions = body.permissions ?? [];
    const rules = (body.rules ?? []) as AccessRule[];
    const errors: FieldErrors = checkGrants('private', permissions, rules, { allowConditions: true });
    if (permissions.length === 0 && rules.length === 0)
      addFieldError(errors, 'permissions', 'at least one of permissions and rules must be granted');
    for (const [path, messages] of Object.entries(escalations(who, permissions, rules)))
      if (!errors[path]) errors[path] = messages;
    if (Object.keys(errors).length) throw new ValidationException(errors);

    const now = this.clock.now();
    return this.db.withTransaction(async () => {
      const session = await this.sessions.lockPendingByNonce(who.tenantId, hashApiKey(body.nonce), now);
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
      await this.sessions.authorize(who.tenantId, session.id, {
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
      this.audit.record({
        entityType: 'session',
        entityId: session.id,
        operation: 'update',
        message: `Session authorized with ${granted.join(' and ')}`,
      });
      return { id: session.id };
    });
  }
}
