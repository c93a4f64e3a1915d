import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean, IsOptional, IsString, Length, MaxLength } from 'class-validator';
import { OffsetPaginationDto } from '../../../common/pagination/offset-pagination.dto';

export class CreateProxyDto {
  /** @example "Card processor" */
  @IsString()
  @Length(1, 200)
  name: string;

  /**
   * Where requests naming the proxy's key go (`/<path>` and the query string are appended). Must pass
   * the outbound policy: http or https, and a public address unless listed in OUTBOUND_ALLOWED_HOSTS.
   * @example "https://api.processor.example/v1"
   */
  @IsString()
  @MaxLength(2000)
  destination_url: string;

  /**
   * With true (the default) a request through the proxy needs a `BT-API-KEY` (private or session key)
   * and may detokenize what that key may use; with false it is anonymous and detokenizes nothing.
   */
  @IsOptional()
  @IsBoolean()
  require_auth?: boolean;
}

/** PUT: the whole proxy; `require_auth` omitted is true. */
export class UpdateProxyDto extends CreateProxyDto {}

/** PATCH: only the fields given change. */
export class PatchProxyDto {
  @IsOptional()
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  destination_url?: string;

  @IsOptional()
  @IsBoolean()
  require_auth?: boolean;
}

export class ProxyDto {
  id: string;

  /**
   * The address requests name in `BT-PROXY-KEY`; shown on every read (it is not a credential).
   * @example "key_prx_4TWYdFvN8sC5ZqJt7hEmRk2bXa9GpLwD3uVnQy6fHs1"
   */
  key: string;

  tenant_id: string;
  name: string;
  destination_url: string;
  require_auth: boolean;
  created_by: string | null;
  created_at: string;

  @ApiProperty({ type: String, nullable: true })
  modified_by: string | null;

  @ApiProperty({ type: String, nullable: true })
  modified_at: string | null;
}

export class ProxyPageDto {
  pagination: OffsetPaginationDto;
  data: ProxyDto[];
}
