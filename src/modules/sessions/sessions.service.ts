import { Transactional } from '../../common/context/transactional';
import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { randomBytes, randomUUID } from 'node:crypto';
import { AuditTrail } from '../../common/audit/audit-trail.service';
import type { AccessRule } from '../../common/auth/access-rule';
import { BASE62, generateApiKey, hashApiKey } from '../../common/auth/api-key';
import { checkGrants, escalations } from '../../common/auth/grants';
import type { Principal } from '../../common/auth/principal';
import { addFieldError, FieldErrors } from '../../common/errors/problem.exception';
import { validationProblem } from '../../common/errors/validation';
import { Clock } from '../../common/jobs/clock';
import { ExclusiveJobRunner, Tick } from '../../common/jobs/exclusive';
import { LOCK_KEYS } from '../../database/data-source';
import { AuthorizeSessionDto, CreateSessionResponseDto } from './dto/session.dto';

export const SESSION_LIFETIME_MS = 3 * 60_000;
export const MAX_SESSION_LIFETIME_MS = 24 * 60 * 60_000;

interface NonceRow {
  id: string;
  created_at: Date;
  expires_at: Date;
}

/** Sessions (contract section 4): created by a public application, authorized by a private one. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
    private readonly audit: AuditTrail,
  ) {}

  /** A new session without access; the key and nonce are returned once and stored as digests. */
  @Transactional()
  async create(who: Principal): Promise<CreateSessionResponseDto & { id: string }> {
    const id = randomUUID();
    const sessionKey = generateApiKey('session');
    const nonce = BASE62.encode(randomBytes(24));
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_MS);
    await this.db.tx.query(
      `INSERT INTO sessions (id, tenant_id, application_id, key_hash, nonce_hash, expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [id, who.tenantId, who.applicationId, hashApiKey(sessionKey), hashApiKey(nonce), expiresAt, now],
    );
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
    if (Object.keys(errors).length) throw validationProblem(errors);

    const now = this.clock.now();
    return this.db.withTransaction(async () => {
      const rows: NonceRow[] = await this.db.tx.query(
        `SELECT id, created_at, expires_at FROM sessions
          WHERE nonce_hash = $1 AND tenant_id = $2 AND expires_at > $3 FOR UPDATE`,
        [hashApiKey(body.nonce), who.tenantId, now],
      );
      const session = rows[0];
      if (!session) throw validationProblem({ nonce: ['the nonce is unknown, expired or already used'] });
      let expiresAt = session.expires_at;
      if (body.expires_at !== undefined) {
        expiresAt = new Date(body.expires_at);
        const latest = session.created_at.getTime() + MAX_SESSION_LIFETIME_MS;
        if (expiresAt.getTime() <= now.getTime())
          throw validationProblem({ expires_at: ['expires_at must be in the future'] });
        if (expiresAt.getTime() > latest)
          throw validationProblem({
            expires_at: [
              `expires_at must be at most 24 hours after the session was created (${new Date(latest).toISOString()})`,
            ],
          });
      }
      await this.db.tx.query(
        `UPDATE sessions
            SET nonce_hash = NULL, permissions = $2, rules = $3, authorized_by = $4, authorized_at = $5,
                expires_at = $6
          WHERE id = $1`,
        [session.id, permissions, JSON.stringify(rules), who.applicationId, now, expiresAt],
      );
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

  /** Deletes sessions past `expires_at`; one set-based statement, once per tick across instances. */
  @Cron(CronExpression.EVERY_MINUTE)
  scheduledPurge(): Promise<number | undefined> {
    return this.purgeExpired({ tickMs: 60_000 });
  }

  purgeExpired(tick?: Tick): Promise<number | undefined> {
    return this.jobs.run(
      'expired-sessions',
      LOCK_KEYS.jobExpiredSessions,
      async () => {
        const [, count]: [unknown, number] = await this.db.tx.query(
          'DELETE FROM sessions WHERE expires_at <= $1',
          [this.clock.now()],
        );
        return count;
      },
      tick,
    );
  }
}
