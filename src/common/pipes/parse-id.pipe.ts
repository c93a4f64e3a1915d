import { Injectable, PipeTransform } from '@nestjs/common';
import { notFound } from '../errors/problem.exception';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a uuid names nothing: it is a 404 like any other absent resource. */
@Injectable()
export class ParseIdPipe implements PipeTransform<string, string> {
  constructor(private readonly resource: string) {}

  transform(value: string): string {
    if (!UUID.test(value)) throw notFound(this.resource);
    return value.toLowerCase();
  }
}
