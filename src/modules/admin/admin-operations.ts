import { Injectable, Optional } from '@nestjs/common';
import { AuditCheckpointer } from '../../common/audit/audit-checkpointer.service';
import { AuditSigningKeys } from '../../common/audit/audit-signing-keys.service';
import { AuditVerifier, type AuditReport } from '../../common/audit/audit-verifier.service';
import { SystemLog, type SystemLogLine } from '../../common/audit/system-log';
import { MasterKeyRing } from '../../common/crypto/master-keys';
import { TenantKeysService } from '../../common/crypto/tenant-keys.service';
import { CeremonyResult, KeyCeremony } from '../../common/crypto/key-ceremony';
import { KeyRecords } from '../../common/crypto/key-records';
import { KeyStatus, KeyStatusReader } from '../../common/crypto/key-status';
import { GeneratedKey, HsmKeys, NotInHsmError } from '../../common/crypto/pkcs11/hsm-keys';
import type { CreatedTenantDto } from '../tenants/dto/tenant.dto';
import {
  DataKeyRotation,
  type DataKeyRotationStatus,
  type DataKeysRotated,
} from '../tokens/rotation/data-key-rotation.service';
import { TenantsService } from '../tenants/tenants.service';
import { InstanceHeartbeatService, LIVE_SECONDS } from './instance-heartbeat.service';
import { InstancesRepository } from './instances.repository';
import {
  ProviderChange,
  type ProviderChanged,
  ProviderChangeRefusal,
  type ProviderChangeRequest,
} from './provider-change';

/** What the command line can ask for; the same requests travel over the server's control socket. */
export type AdminRequest =
  | { op: 'tenant.create'; name: string }
  /** `active`: the version the caller means to wrap under (its ENCRYPTION_KEYS), checked by the server. */
  | { op: 'keys.rotate'; active?: string; batch?: number }
  /** Tenants' data keys: a new generation each, and every token sealed again under it (docs/keys.md). */
  | { op: 'keys.rotate-tenant-keys'; batch?: number }
  /** A change of provider, every server stopped (docs/keys.md). */
  | ({ op: 'keys.rotate-to' } & ProviderChangeRequest)
  /**
   * `seal`: append and checkpoint what has committed first; `checkpoint`: a signed note kept outside the
   * service, which the log must still hold, as its file holds it (one extra newline at the end accepted).
   */
  | { op: 'logs.verify'; tenant?: string; seal: boolean; checkpoint?: string }
  /** A new split key-encrypting key (docs/keys.md): `shares` custodians, any `threshold` of whom open it. */
  | { op: 'keys.ceremony'; shares: number; threshold: number }
  | { op: 'keys.status' }
  /** A new key-encrypting key made in the HSM (KEY_PROVIDER=pkcs11). */
  | { op: 'keys.generate' }
  /** The system tenant's log: every use of the key-encrypting keys (docs/keys.md). */
  | { op: 'logs.system' };

export interface RotatedKeys {
  active_version: string;
  rewrapped_tenants: number;
}

export type AdminResult =
  | CreatedTenantDto
  | RotatedKeys
  | AuditReport
  | CeremonyResult
  | (KeyStatus & { data_keys: { rotation: DataKeyRotationStatus | null } })
  | DataKeysRotated
  | GeneratedKey
  | ProviderChanged
  | SystemLogLine[];

/** Tenant keys re-wrapped per committed batch by `vault keys rotate`. */
export const ROTATION_BATCH = 100;

/** Tokens sealed again per committed batch by `vault keys rotate --tenant-keys`. */
export const DATA_KEY_BATCH = 500;

/** An operation refused for a reason the operator can fix (shown as one line, nothing changed). */
export class AdminRefusal extends Error {}

/** The operator's operations, in the CLI or in the server. */
@Injectable()
export class AdminOperations {
  constructor(
    private readonly tenants: TenantsService,
    private readonly tenantKeys: TenantKeysService,
    private readonly checkpointer: AuditCheckpointer,
    private readonly verifier: AuditVerifier,
    private readonly signingKeys: AuditSigningKeys,
    private readonly ring: MasterKeyRing,
    private readonly instances: InstancesRepository,
    private readonly ceremony: KeyCeremony,
    private readonly keyStatus: KeyStatusReader,
    private readonly hsmKeys: HsmKeys,
    private readonly providerChange: ProviderChange,
    private readonly records: KeyRecords,
    private readonly systemLog: SystemLog,
    private readonly dataKeys: DataKeyRotation,
    @Optional() private readonly heartbeat?: InstanceHeartbeatService,
  ) {}

  /** `progress`: lines telling how far a long operation is (a rotation's batches), where one listens. */
  async run(request: AdminRequest, progress?: (line: string) => void): Promise<AdminResult> {
    switch (request.op) {
      case 'tenant.create':
        return this.tenants.createTenant(request.name);
      case 'keys.rotate': {
        await this.checkRotation(request.active);
        // On record in the system log, its start in a change of its own (there even if it then fails).
        const active = this.ring.active.version;
        await this.records.note(active, 'update', `Key rotation to ${active} started`);
        // The tenant keys in batches, each committed (a crash loses the batch in flight; run it again),
        // then the audit log's signing keys (sealed under the master key too) and the end on record.
        const result = await this.tenantKeys.rotateInBatches(request.batch ?? ROTATION_BATCH, (done, total) =>
          progress?.(`re-wrapped: ${done} of ${total} tenant keys under ${active}`),
        );
        await this.records.transaction(async (change, record) => {
          const resealed = await this.signingKeys.reseal(change);
          record(
            active,
            'update',
            `Key rotation to ${active} finished: ${result.rewrapped} tenant keys and ${resealed} signing keys re-wrapped`,
          );
        });
        return { active_version: result.active, rewrapped_tenants: result.rewrapped };
      }
      case 'logs.verify':
        // Rows committed since the last tick are appended first, so that the report covers them too.
        if (request.seal) await this.checkpointer.run();
        return this.verifier.verify({ tenant: request.tenant, checkpoint: request.checkpoint });
      case 'logs.system':
        return this.systemLog.read();
      case 'keys.status':
        return { ...(await this.keyStatus.read()), data_keys: { rotation: await this.dataKeys.status() } };
      case 'keys.rotate-tenant-keys':
        return this.dataKeys.run(request.batch ?? DATA_KEY_BATCH, (done, total) =>
          progress?.(`sealed again: ${done} of ${total} tokens under their tenant's new data key`),
        );
      case 'keys.rotate-to': {
        const live = (await this.instances.live(LIVE_SECONDS)).filter(
          (instance) => instance.id !== this.heartbeat?.self.id,
        );
        if (live.length > 0 || this.heartbeat)
          throw new AdminRefusal(
            `keys rotate --to refused: a change of provider is made with every server stopped; ${
              live.map((i) => `the server on ${i.hostname} (pid ${i.pid})`).join(', ') || 'this server'
            } is running. Nothing was changed.`,
          );
        try {
          return await this.providerChange.run(request);
        } catch (error) {
          if (error instanceof ProviderChangeRefusal) throw new AdminRefusal(error.message);
          throw error;
        }
      }
      case 'keys.generate':
        try {
          return await this.hsmKeys.generate();
        } catch (error) {
          if (error instanceof NotInHsmError)
            throw new AdminRefusal(
              'keys ceremony --provider pkcs11 refused: only with KEY_PROVIDER=pkcs11 and its PKCS11_* settings (docs/keys.md)',
            );
          throw error;
        }
      case 'keys.ceremony':
        try {
          return await this.ceremony.run(request.shares, request.threshold);
        } catch (error) {
          if (error instanceof RangeError) throw new AdminRefusal(`keys ceremony refused: ${error.message}`);
          throw error;
        }
    }
  }

  /**
   * Re-wrapping under a version that a running server lacks would make every tenant key unreadable to
   * it (500s on token writes until it restarts): refused, naming the server, while one is live.
   */
  private async checkRotation(wanted: string | undefined): Promise<void> {
    const active = this.ring.active.version;
    if (wanted !== undefined && wanted !== active)
      throw new AdminRefusal(
        `keys rotate refused: the running server (pid ${process.pid}) encrypts under master key ${active}, not ${wanted}. Restart it with the same ENCRYPTION_KEYS as this command, then rotate; nothing was re-wrapped.`,
      );
    const lacking = (await this.instances.live(LIVE_SECONDS)).filter(
      (instance) => instance.id !== this.heartbeat?.self.id && !instance.keyVersions.includes(active),
    );
    if (lacking.length > 0)
      throw new AdminRefusal(
        `keys rotate refused: ${lacking
          .map(
            (i) =>
              `the server on ${i.hostname} (pid ${i.pid}) holds master key ${i.keyVersions.join(',')} only`,
          )
          .join(
            '; ',
          )}, not ${active}. Restart every server with ENCRYPTION_KEYS holding ${active} first, then rotate; nothing was re-wrapped.`,
      );
  }
}
