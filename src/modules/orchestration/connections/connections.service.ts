import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { open, seal } from '../../../common/crypto/aead';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { ValidationException } from '../../../common/errors/domain.exception';
import type { OutboxEvent } from '../../../common/events/event-outbox';
import { addFieldError, FieldErrors } from '../../../common/errors/problem.exception';
import { Clock } from '../../../common/jobs/clock';
import { ExclusiveJobRunner } from '../../../common/jobs/exclusive';
import { Change, systemOrigin } from '../../../common/unit-of-work/change';
import type { RequestOrigin } from '../../../common/unit-of-work/origin.decorator';
import { UnitOfWork } from '../../../common/unit-of-work/unit-of-work';
import { LOCK_KEYS } from '../../../database/data-source';
import { findFormula, Formula, supports } from '../formulas/formulas';
import type { Credentials } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { OrchestrationException } from '../orchestration.errors';
import { ConnectionDto, ConnectionRequestDto } from './connection.dto';
import { ConnectionsRepository, ConnectionValues } from './connections.repository';
import { ConnectionEntity } from './entities/connection.entity';

export const SECRET_PLACEHOLDER = '********';

/** A connection as payments need it: the row, its formula and its clear credentials. */
export interface UsableConnection {
  row: ConnectionEntity;
  formula: Formula;
  credentials: Credentials;
}

const secretsAad = (tenantId: string, connectionId: string) =>
  `${tenantId}:${connectionId}:connection-secrets`;

export function connectionDto(row: ConnectionEntity, options: { withMethod: boolean }): ConnectionDto {
  return {
    id: row.id,
    connection_formula_id: row.formulaId,
    display_name: row.displayName,
    ...(options.withMethod ? { method: row.method } : {}),
    fields: row.fields.map((f) => ({ key: f.key, value: f.value ?? SECRET_PLACEHOLDER })),
    accepted_countries: row.acceptedCountries,
    accepted_currencies: row.acceptedCurrencies,
    active: row.active,
    environment: row.environment,
    status: row.status,
    three_d_secure_enabled: row.threeDSecureEnabled,
  };
}

/**
 * `connection:updated`, reported when a connection's status changes: an update
 * (which sets it `pending` again) and its verification's outcome. Creating one (there is no created
 * event; its verification reports it) and deleting one report nothing. `data` is the connection as GET
 * answers it: secret field values are `********`.
 */
function updatedEvent(row: ConnectionEntity): OutboxEvent {
  return {
    tenantId: row.tenantId,
    type: 'connection:updated',
    entityId: row.id,
    data: connectionDto(row, { withMethod: true }),
  };
}

/**
 * Checks a connection request against its formula and returns the field values,
 * every error named by its path.
 */
function validateAgainstFormula(
  body: ConnectionRequestDto,
  stored: Map<string, string>,
  vendorFormulas: readonly string[],
  checkVendorFields: (values: Map<string, string>, environment: 'test' | 'live') => Record<string, string>,
): { formula: Formula; values: Map<string, string> } {
  const errors: FieldErrors = {};
  const formula = findFormula(body.connection_formula_id);
  if (!formula) {
    addFieldError(
      errors,
      'connection_formula_id',
      `unknown connection formula ${body.connection_formula_id}`,
    );
    throw new ValidationException(errors);
  }
  if (body.method !== formula.method)
    addFieldError(errors, 'method', `method must be ${formula.method} for ${formula.id}`);
  const values = new Map<string, string>();
  body.fields.forEach((field, i) => {
    const spec = formula.fields.find((f) => f.key === field.key);
    if (!spec) return addFieldError(errors, `fields[${i}].key`, `${formula.id} has no field ${field.key}`);
    if (values.has(field.key))
      return addFieldError(errors, `fields[${i}].key`, `field ${field.key} is given twice`);
    let value = field.value;
    if (spec.secret && value === SECRET_PLACEHOLDER) {
      const kept = stored.get(field.key);
      if (kept === undefined)
        return addFieldError(errors, `fields[${i}].value`, `${field.key} has no stored value to keep`);
      value = kept;
    }
    if (spec.required && value.trim() === '')
      return addFieldError(errors, `fields[${i}].value`, `${field.key} must not be empty`);
    values.set(field.key, value);
  });
  for (const spec of formula.fields) {
    if (spec.required && !body.fields.some((f) => f.key === spec.key))
      addFieldError(errors, 'fields', `field ${spec.key} is required by ${formula.id}`);
  }
  const subset = (name: 'accepted_countries' | 'accepted_currencies', supported: string[], what: string) => {
    const given = body[name];
    if (given.length === 0) addFieldError(errors, name, `at least one ${what} is required`);
    given.forEach((code, i) => {
      if (!supported.includes(code))
        addFieldError(errors, `${name}[${i}]`, `${formula.id} does not support ${what} ${code}`);
    });
  };
  subset('accepted_countries', formula.supported_countries, 'country');
  subset('accepted_currencies', formula.supported_currencies, 'currency');
  const environment = body.environment ?? 'sandbox';
  if (environment !== 'sandbox' && !vendorFormulas.includes(formula.id))
    addFieldError(
      errors,
      'environment',
      `${formula.id} has no ${environment} environment: only the sandbox; formulas with a vendor adapter: ${vendorFormulas.join(', ')}`,
    );
  else if (environment !== 'sandbox')
    for (const [key, message] of Object.entries(checkVendorFields(values, environment))) {
      const at = body.fields.findIndex((f) => f.key === key);
      addFieldError(errors, at < 0 ? 'fields' : `fields[${at}].value`, message);
    }
  if (Object.keys(errors).length) throw new ValidationException(errors);
  return { formula, values };
}

/**
 * The audit message of a verification. Reasons are fixed texts of the processors (a field's name, a
 * status code, the vendor's error code), never a credential.
 */
function verificationMessage(outcome: { status: 'available' | 'failed'; reason: string | null }): string {
  if (outcome.status === 'available') return 'connection verified: available';
  return `connection verification failed: ${outcome.reason ?? 'the vendor refused the credentials'}`;
}

/** Connections to payment vendors, built from formulas; their secret values are sealed at rest. */
@Injectable()
export class ConnectionsService implements OnApplicationShutdown {
  private readonly logger = new Logger('Connections');
  private readonly verifying = new Set<Promise<unknown>>();
  private stopped = false;

  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly tenantKeys: TenantKeysService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
    private readonly jobs: ExclusiveJobRunner,
    private readonly work: UnitOfWork,
  ) {}

  async create(origin: RequestOrigin, body: ConnectionRequestDto): Promise<ConnectionDto> {
    const who = origin.actor;
    const id = randomUUID();
    // Checked and sealed before the change opens: it only inserts.
    const values = await this.valuesOf(who.tenantId, id, body, new Map());
    return this.work.transaction(origin, async (change) => {
      const row = await this.connections.insert(
        change,
        who.tenantId,
        id,
        values,
        who.applicationId,
        this.clock.now(),
      );
      change.audit({
        entityType: 'connection',
        entityId: id,
        operation: 'create',
        message: 'Connection created',
      });
      this.verifyAfterCommit(change, who.tenantId, id);
      return connectionDto(row, { withMethod: false });
    });
  }

  async list(who: Principal): Promise<ConnectionDto[]> {
    const rows = await this.connections.list(who.tenantId);
    return rows.map((row) => connectionDto(row, { withMethod: true }));
  }

  async get(who: Principal, id: string): Promise<ConnectionDto> {
    return connectionDto(await this.find(who.tenantId, id), { withMethod: true });
  }

  async update(origin: RequestOrigin, id: string, body: ConnectionRequestDto): Promise<ConnectionDto> {
    const who = origin.actor;
    // The tenant's keys, read before the change opens (opening the stored secrets and sealing the new
    // ones then reads nothing more while the change holds its connection and the row's lock).
    await this.tenantKeys.keysFor(who.tenantId);
    return this.work.transaction(origin, async (change) => {
      const current = await this.connections.lock(change, who.tenantId, id);
      if (!current) throw OrchestrationException.connectionNotFound();
      const stored =
        body.connection_formula_id === current.formulaId ? await this.credentialsOf(current) : {};
      const values = await this.valuesOf(who.tenantId, id, body, new Map(Object.entries(stored)));
      const row = await this.connections.update(change, who.tenantId, id, values, this.clock.now());
      // Every update sets it `pending` again until verified: reported, like the verification's outcome.
      change.emit(updatedEvent(row));
      change.audit({
        entityType: 'connection',
        entityId: id,
        operation: 'update',
        message: 'Connection updated',
      });
      this.verifyAfterCommit(change, who.tenantId, id);
      return connectionDto(row, { withMethod: true });
    });
  }

  /** The request checked against its formula, as the values create and update both write. */
  private async valuesOf(
    tenantId: string,
    id: string,
    body: ConnectionRequestDto,
    stored: Map<string, string>,
  ): Promise<ConnectionValues> {
    const { formula, values } = validateAgainstFormula(
      body,
      stored,
      this.processors.vendorFormulas(),
      (values, environment) =>
        this.processors.for({ formulaId: body.connection_formula_id, environment }).checkFields?.(values) ??
        {},
    );
    const { fields, secrets } = await this.splitSecrets(tenantId, id, formula, values);
    return {
      formulaId: formula.id,
      method: formula.method,
      displayName: body.display_name,
      fields,
      secrets,
      acceptedCountries: body.accepted_countries,
      acceptedCurrencies: body.accepted_currencies,
      active: body.active ?? true,
      environment: body.environment ?? 'sandbox',
      threeDSecureEnabled: supports(formula, 'three_d_secure_pass_through'),
    };
  }

  /** Soft when transactions refer to the connection (they keep showing it), else the row goes. */
  async delete(origin: RequestOrigin, id: string): Promise<void> {
    const who = origin.actor;
    await this.work.transaction(origin, async (change) => {
      if (!(await this.connections.lock(change, who.tenantId, id)))
        throw OrchestrationException.connectionNotFound();
      if (await this.connections.hasTransactions(change, who.tenantId, id))
        await this.connections.softDelete(change, who.tenantId, id, this.clock.now());
      else await this.connections.delete(change, who.tenantId, id);
      change.audit({
        entityType: 'connection',
        entityId: id,
        operation: 'delete',
        message: 'Connection deleted',
      });
    });
  }

  /** The connection with its clear credentials, for a payment; deleted ones only when `includeDeleted`. */
  async loadForPayment(
    tenantId: string,
    id: string | null,
    includeDeleted = false,
  ): Promise<UsableConnection | undefined> {
    // A transaction declined by a rule has no connection.
    if (id === null) return undefined;
    const row = await this.connections.find(tenantId, id, { includeDeleted });
    if (!row) return undefined;
    return { row, formula: findFormula(row.formulaId)!, credentials: await this.credentialsOf(row) };
  }

  /** Verification sweep: pending connections are checked with their vendor, without holding any row lock. */
  @Interval(1_000)
  async verifyPending(): Promise<void> {
    if (this.stopped) return;
    await this.jobs.runAlone('connection-verification', LOCK_KEYS.jobConnectionVerification, async () => {
      for (const { tenantId, id } of await this.connections.findPending(50)) {
        // A stopping process leaves the rest pending, for another instance or its next start.
        if (this.jobs.stopping) return;
        // A vendor that does not answer leaves its connection pending (tried again), not the others.
        await this.verify(tenantId, id).catch((error: unknown) =>
          this.logger.warn({ err: error, connection_id: id }, 'connection verification failed'),
        );
      }
    });
  }

  /** Checks one connection's credentials; the result applies only if the connection did not change meanwhile. */
  async verify(tenantId: string, id: string): Promise<void> {
    const row = await this.connections.findPendingOne(tenantId, id);
    if (!row) return;
    const result = await this.processors
      .for(row)
      .verifyCredentials(
        await this.credentialsOf(row),
        row.environment === 'sandbox' ? undefined : row.environment,
      );
    const outcome = { status: result.ok ? 'available' : 'failed', reason: result.reason ?? null } as const;
    await this.work.transaction(systemOrigin(tenantId), async (change) => {
      if (!(await this.connections.recordVerification(change, row, outcome))) return;
      change.emit(updatedEvent({ ...row, status: outcome.status, statusReason: outcome.reason }));
      // The outcome, and why a connection failed, is read in its audit log (GET /logs?entity_type=connection).
      change.audit({
        entityType: 'connection',
        entityId: id,
        operation: 'update',
        message: verificationMessage(outcome),
      });
    });
  }

  onApplicationShutdown(): Promise<unknown> {
    this.stopped = true;
    return Promise.allSettled([...this.verifying]);
  }

  /** Verifies once the change has committed (the sweep catches anything missed, a crash say). */
  private verifyAfterCommit(change: Change, tenantId: string, id: string): void {
    change.afterCommit(() => {
      if (this.stopped) return;
      const run = this.verify(tenantId, id)
        .catch((error: unknown) =>
          this.logger.warn({ err: error, connection_id: id }, 'connection verification failed'),
        )
        .finally(() => this.verifying.delete(run));
      this.verifying.add(run);
    });
  }

  private async find(tenantId: string, id: string): Promise<ConnectionEntity> {
    const row = await this.connections.find(tenantId, id);
    if (!row) throw OrchestrationException.connectionNotFound();
    return row;
  }

  private async splitSecrets(
    tenantId: string,
    id: string,
    formula: Formula,
    values: Map<string, string>,
  ): Promise<{ fields: { key: string; value: string | null }[]; secrets: Buffer | null }> {
    const secret: Record<string, string> = {};
    const fields = [...values].map(([key, value]) => {
      if (!formula.fields.find((f) => f.key === key)?.secret) return { key, value };
      secret[key] = value;
      return { key, value: null };
    });
    if (!Object.keys(secret).length) return { fields, secrets: null };
    const keys = await this.tenantKeys.keysFor(tenantId);
    return {
      fields,
      secrets: seal(keys.encryption, Buffer.from(JSON.stringify(secret)), secretsAad(tenantId, id)),
    };
  }

  private async credentialsOf(row: ConnectionEntity): Promise<Credentials> {
    const credentials: Credentials = {};
    for (const f of row.fields) if (f.value !== null) credentials[f.key] = f.value;
    if (row.secrets) {
      const keys = await this.tenantKeys.keysFor(row.tenantId);
      Object.assign(
        credentials,
        JSON.parse(
          open(keys.encryption, row.secrets, secretsAad(row.tenantId, row.id)).toString('utf8'),
        ) as Credentials,
      );
    }
    return credentials;
  }
}
