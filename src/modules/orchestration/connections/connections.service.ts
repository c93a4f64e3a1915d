import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../../common/auth/principal';
import { open, seal } from '../../../common/crypto/aead';
import { TenantKeysService } from '../../../common/crypto/tenant-keys.service';
import { addFieldError, FieldErrors, notFound } from '../../../common/errors/problem.exception';
import { validationProblem } from '../../../common/errors/validation';
import { Clock } from '../../../common/jobs/clock';
import { findFormula, Formula, supports } from '../formulas/formulas';
import type { Credentials } from '../processors/processor.port';
import { ProcessorRegistry } from '../processors/processor.registry';
import { ConnectionDto, ConnectionRequestDto } from './connection.dto';

export const SECRET_PLACEHOLDER = '********';

interface ConnectionRow {
  id: string;
  tenant_id: string;
  formula_id: string;
  method: string;
  display_name: string;
  fields: { key: string; value: string | null }[];
  secrets: Buffer | null;
  accepted_countries: string[];
  accepted_currencies: string[];
  active: boolean;
  status: 'pending' | 'available' | 'failed';
  three_d_secure_enabled: boolean;
  version: number;
  deleted_at: Date | null;
}

/** A connection as payments need it: the row, its formula and its clear credentials. */
export interface UsableConnection {
  row: ConnectionRow;
  formula: Formula;
  credentials: Credentials;
}

const secretsAad = (tenantId: string, connectionId: string) =>
  `${tenantId}:${connectionId}:connection-secrets`;

export function connectionDto(row: ConnectionRow, options: { withMethod: boolean }): ConnectionDto {
  return {
    id: row.id,
    connection_formula_id: row.formula_id,
    display_name: row.display_name,
    ...(options.withMethod ? { method: row.method } : {}),
    fields: row.fields.map((f) => ({ key: f.key, value: f.value ?? SECRET_PLACEHOLDER })),
    accepted_countries: row.accepted_countries,
    accepted_currencies: row.accepted_currencies,
    active: row.active,
    status: row.status,
    three_d_secure_enabled: row.three_d_secure_enabled,
  };
}

/**
 * Checks a connection request against its formula (contract section 7) and returns the field values,
 * every error named by its path.
 */
function validateAgainstFormula(
  body: ConnectionRequestDto,
  stored: Map<string, string>,
): { formula: Formula; values: Map<string, string> } {
  const errors: FieldErrors = {};
  const formula = findFormula(body.connection_formula_id);
  if (!formula) {
    addFieldError(
      errors,
      'connection_formula_id',
      `unknown connection formula ${body.connection_formula_id}`,
    );
    throw validationProblem(errors);
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
  if (Object.keys(errors).length) throw validationProblem(errors);
  return { formula, values };
}

/** Connections to payment vendors, built from formulas; their secret values are sealed at rest. */
@Injectable()
export class ConnectionsService implements OnApplicationShutdown {
  private readonly logger = new Logger('Connections');
  private readonly verifying = new Set<Promise<unknown>>();
  private stopped = false;

  constructor(
    private readonly db: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly tenantKeys: TenantKeysService,
    private readonly processors: ProcessorRegistry,
    private readonly clock: Clock,
  ) {}

  async create(who: Principal, body: ConnectionRequestDto): Promise<ConnectionDto> {
    const id = randomUUID();
    const values = await this.columnValues(who.tenantId, id, body, new Map());
    const rows: ConnectionRow[] = await this.db.tx.query(
      `INSERT INTO connections (id, tenant_id, formula_id, method, display_name, fields, secrets, accepted_countries,
                                accepted_currencies, active, three_d_secure_enabled, status, created_by, created_at,
                                updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $13)
       RETURNING *`,
      [id, who.tenantId, ...values, who.applicationId, this.clock.now()],
    );
    this.afterCommit(id);
    return connectionDto(rows[0], { withMethod: false });
  }

  async list(who: Principal): Promise<ConnectionDto[]> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`,
      [who.tenantId],
    );
    return rows.map((row) => connectionDto(row, { withMethod: true }));
  }

  async get(who: Principal, id: string): Promise<ConnectionDto> {
    return connectionDto(await this.find(who.tenantId, id), { withMethod: true });
  }

  async update(who: Principal, id: string, body: ConnectionRequestDto): Promise<ConnectionDto> {
    const current = await this.find(who.tenantId, id, true);
    const stored = body.connection_formula_id === current.formula_id ? await this.credentialsOf(current) : {};
    const values = await this.columnValues(who.tenantId, id, body, new Map(Object.entries(stored)));
    const [rows]: [ConnectionRow[], number] = await this.db.tx.query(
      `UPDATE connections
          SET formula_id = $3, method = $4, display_name = $5, fields = $6, secrets = $7, accepted_countries = $8,
              accepted_currencies = $9, active = $10, three_d_secure_enabled = $11, status = 'pending',
              status_reason = NULL, version = version + 1, updated_at = $12
        WHERE tenant_id = $1 AND id = $2
        RETURNING *`,
      [who.tenantId, id, ...values, this.clock.now()],
    );
    this.afterCommit(id);
    return connectionDto(rows[0], { withMethod: true });
  }

  /**
   * The request checked against its formula, as the values of the columns create and update both write:
   * formula_id, method, display_name, fields, secrets, accepted_countries, accepted_currencies, active,
   * three_d_secure_enabled.
   */
  private async columnValues(
    tenantId: string,
    id: string,
    body: ConnectionRequestDto,
    stored: Map<string, string>,
  ): Promise<unknown[]> {
    const { formula, values } = validateAgainstFormula(body, stored);
    const { fields, secrets } = await this.splitSecrets(tenantId, id, formula, values);
    return [
      formula.id,
      formula.method,
      body.display_name,
      JSON.stringify(fields),
      secrets,
      body.accepted_countries,
      body.accepted_currencies,
      body.active ?? true,
      supports(formula, 'three_d_secure_pass_through'),
    ];
  }

  /** Soft when transactions refer to the connection (they keep showing it), else the row goes. */
  async delete(who: Principal, id: string): Promise<void> {
    await this.find(who.tenantId, id, true);
    const used: unknown[] = await this.db.tx.query(
      'SELECT 1 FROM transactions WHERE connection_id = $1 LIMIT 1',
      [id],
    );
    if (used.length)
      await this.db.tx.query('UPDATE connections SET deleted_at = $2, active = false WHERE id = $1', [
        id,
        this.clock.now(),
      ]);
    else await this.db.tx.query('DELETE FROM connections WHERE id = $1', [id]);
  }

  /** The connection with its clear credentials, for a payment; deleted ones only when `includeDeleted`. */
  async loadForPayment(
    tenantId: string,
    id: string,
    includeDeleted = false,
  ): Promise<UsableConnection | undefined> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND id = $2${includeDeleted ? '' : ' AND deleted_at IS NULL'}`,
      [tenantId, id],
    );
    const row = rows[0];
    if (!row) return undefined;
    return { row, formula: findFormula(row.formula_id)!, credentials: await this.credentialsOf(row) };
  }

  /** Verification sweep: pending connections are checked with their vendor, without holding any lock. */
  @Interval(1_000)
  async verifyPending(): Promise<void> {
    if (this.stopped) return;
    const rows: { id: string }[] = await this.db.tx.query(
      `SELECT id FROM connections WHERE status = 'pending' AND deleted_at IS NULL ORDER BY updated_at LIMIT 50`,
    );
    for (const { id } of rows) await this.verify(id);
  }

  /** Checks one connection's credentials; the result applies only if the connection did not change meanwhile. */
  async verify(id: string): Promise<void> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE id = $1 AND status = 'pending' AND deleted_at IS NULL`,
      [id],
    );
    const row = rows[0];
    if (!row) return;
    const result = await this.processors.for(row.formula_id).verifyCredentials(await this.credentialsOf(row));
    await this.db.tx.query(
      `UPDATE connections SET status = $3, status_reason = $4 WHERE id = $1 AND version = $2 AND status = 'pending'`,
      [id, row.version, result.ok ? 'available' : 'failed', result.reason ?? null],
    );
  }

  onApplicationShutdown(): Promise<unknown> {
    this.stopped = true;
    return Promise.allSettled([...this.verifying]);
  }

  /** Verifies soon after the request's transaction has committed (the sweep catches anything missed). */
  private afterCommit(id: string): void {
    const run = new Promise<void>((resolve) => setTimeout(resolve, 50))
      .then(() => (this.stopped ? undefined : this.verify(id)))
      .catch((error: unknown) =>
        this.logger.warn({ err: error, connection_id: id }, 'connection verification failed'),
      )
      .finally(() => this.verifying.delete(run));
    this.verifying.add(run);
  }

  private async find(tenantId: string, id: string, lock = false): Promise<ConnectionRow> {
    const rows: ConnectionRow[] = await this.db.tx.query(
      `SELECT * FROM connections WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [tenantId, id],
    );
    if (!rows[0]) throw notFound('Connection');
    return rows[0];
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

  private async credentialsOf(row: ConnectionRow): Promise<Credentials> {
    const credentials: Credentials = {};
    for (const f of row.fields) if (f.value !== null) credentials[f.key] = f.value;
    if (row.secrets) {
      const keys = await this.tenantKeys.keysFor(row.tenant_id);
      Object.assign(
        credentials,
        JSON.parse(
          open(keys.encryption, row.secrets, secretsAad(row.tenant_id, row.id)).toString('utf8'),
        ) as Credentials,
      );
    }
    return credentials;
  }
}
