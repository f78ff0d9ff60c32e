import {
  BadRequestException,
  Param,
  Query,
  ValidationPipe,
  type ArgumentMetadata,
  type PipeTransform,
  type Type,
} from '@nestjs/common';
import { ApiParam, ApiQuery } from '@nestjs/swagger';
import {
  getMetadataStorage,
  registerDecorator,
  ValidateIf,
  type ValidationError,
  type ValidationOptions,
} from 'class-validator';
import { isUuid } from './roles.js';
import { isStorableText } from './storable-text.js';
import { ERRORS } from './error-messages.js';

function firstMessages(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    // class-validator's own wording ("property x should not exist") names no rule a caller can act on.
    if (e.constraints?.whitelistValidation) return [`${path} is not an accepted field`];
    const own = e.constraints ? [Object.values(e.constraints)[0]] : [];
    return own.length > 0 ? own : firstMessages(e.children ?? [], path);
  });
}

/** A request body that failed to parse, raised only when a route reads its body. */
export class DeferredBodyError {
  constructor(readonly error: unknown) {}
}

/**
 * Strict body validation: the body must be a JSON object, unknown fields are refused, types are
 * never coerced ("5" is not 5), and the 400 names each bad field with its rule in one message.
 * `new StrictBodyPipe(Dto)` names the DTO class itself, so the route's parameter can be typed
 * `Readonly<Dto>`: a parameter whose declared type is not a class is skipped by a host's global
 * ValidationPipe, so our 400s and the fields we accept never depend on the host's global pipes.
 */
export class StrictBodyPipe implements PipeTransform {
  private readonly inner = new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    stopAtFirstError: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new BadRequestException(firstMessages(errors).join('; ')),
  });

  constructor(private readonly type: Type<unknown>) {}

  async transform(value: unknown, given: ArgumentMetadata): Promise<unknown> {
    const metadata: ArgumentMetadata = { ...given, metatype: this.type };
    if (metadata.type !== 'body') return this.inner.transform(value, metadata);
    // A body the parser could not read is refused here, after the guards (see DeferredBodyError).
    if (value instanceof DeferredBodyError) throw value.error;
    // No body at all reads as {} (so the 400 names the missing fields); a JSON null is a wrong type.
    if (value === undefined) value = {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new BadRequestException(ERRORS.bodyNotObject);
    }
    // class-validator's whitelist looks names up in a plain object, so keys that Object.prototype
    // holds (`constructor`, `prototype`, `toString`...) slip through it; check own keys here.
    if (metadata.metatype) {
      const known = declaredProperties(metadata.metatype);
      const unknown = Object.keys(value).filter((k) => !known.has(k));
      if (unknown.length > 0) throw new BadRequestException(unknown.map((k) => ERRORS.unknownField(k)).join('; '));
    }
    return this.inner.transform(value, metadata);
  }
}

const declared = new WeakMap<object, Set<string>>();

/** The properties a DTO class declares through class-validator decorators. */
function declaredProperties(metatype: abstract new (...args: never[]) => unknown): Set<string> {
  let names = declared.get(metatype);
  if (!names) {
    names = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(metatype, '', true, false)
        .map((m) => m.propertyName),
    );
    declared.set(metatype, names);
  }
  return names;
}

/** Query strings: validated the same way, but unknown parameters are ignored (cache-busters etc.). */
export const queryPipe = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: false,
  stopAtFirstError: true,
  transform: true,
  transformOptions: { enableImplicitConversion: false },
  exceptionFactory: (errors) => new BadRequestException(firstMessages(errors).join('; ')),
});

/**
 * `queryPipe` for a route whose parameter is typed `Readonly<Query>` (see StrictBodyPipe): the
 * query class is named here, so a host's global ValidationPipe never sees it and never refuses
 * the parameters our contract ignores.
 */
export class QueryPipe implements PipeTransform {
  constructor(private readonly type: Type<unknown>) {}

  transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    return queryPipe.transform(value, { ...metadata, metatype: this.type });
  }
}

/**
 * The query string of a route, validated by our own pipe against `type` and documented from it:
 * `@QueryOf(Dto) query: Readonly<Dto>`. The parameter's declared type is not a class, so a host's
 * global ValidationPipe never sees it (its whitelist would refuse the parameters we ignore, and its
 * messages would replace ours); the OpenAPI parameters come from the class through ApiQuery.
 */
export function QueryOf(type: Type<unknown>): ParameterDecorator {
  return (target, key, index) => {
    Query(new QueryPipe(type))(target, key, index);
    if (key === undefined) return;
    const descriptor = Object.getOwnPropertyDescriptor(target, key);
    if (!descriptor) return;
    // One ApiQuery per property, from the class's @ApiProperty metadata (ApiQuery({ type }) would
    // explode the class too, but drops enums).
    const prototype = type.prototype as object;
    const names = (Reflect.getMetadata('swagger/apiModelPropertiesArray', prototype) as string[] | undefined) ?? [];
    for (const name of names.map((n) => n.replace(/^:/, ''))) {
      const property =
        (Reflect.getMetadata('swagger/apiModelProperties', prototype, name) as Record<string, unknown> | undefined) ??
        {};
      ApiQuery({ ...property, name, required: property.required !== false })(target, key, descriptor);
    }
  };
}

/** A path parameter that must be a UUID; names the parameter in the 400. */
export class UuidParamPipe implements PipeTransform<unknown, string> {
  constructor(private readonly name: string) {}
  transform(value: unknown): string {
    if (!isUuid(value)) throw new BadRequestException(ERRORS.notUuid(this.name));
    return value.toLowerCase();
  }
}

/**
 * A path parameter that must be a UUID, validated and documented from one declaration, as
 * `QueryOf` does for a query: `@UuidParam('org_id') orgId: string` (a 400 names the parameter).
 */
export function UuidParam(name: string, description?: string): ParameterDecorator {
  return (target, key, index) => {
    Param(name, new UuidParamPipe(name))(target, key, index);
    if (key === undefined) return;
    const descriptor = Object.getOwnPropertyDescriptor(target, key);
    if (!descriptor) return;
    ApiParam({ name, format: 'uuid', ...(description === undefined ? {} : { description }) })(target, key, descriptor);
  };
}

/*
 * The decorators below pass values of the wrong type and leave the type to `@IsString` /
 * `@IsArray`: class-validator runs a property's constraints in decorator order and the pipe
 * reports the first failure, so a rule that also failed on type would name the wrong rule
 * ("name must be at most 100 characters" for `name: 7`) depending on how decorators are stacked.
 */

/** `@MaxLength` counts user-perceived characters; the contract counts JavaScript string length. */
/** Validates the field only when it is sent: `undefined` is absent, while an explicit `null` is validated (a wrong type). */
export const present = (field: string) => ValidateIf((o: Record<string, unknown>) => o[field] !== undefined);

export function MaxStringLength(max: number, options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'maxStringLength',
      target: object.constructor,
      propertyName,
      constraints: [max],
      options: { message: `${propertyName} must be at most ${max} characters`, ...options },
      validator: { validate: (v: unknown) => typeof v !== 'string' || v.length <= max },
    });
}

/** Every element of an array is one of `allowed` (whether it is an array is `@IsArray`'s job). */
export function EachIn(allowed: readonly unknown[], options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'eachIn',
      target: object.constructor,
      propertyName,
      constraints: [allowed],
      options: { message: `${propertyName} may only contain ${allowed.join(', ')}`, ...options },
      validator: { validate: (v: unknown) => !Array.isArray(v) || v.every((x) => allowed.includes(x)) },
    });
}

/** A UUID in the canonical 8-4-4-4-12 form, any version. */
export function IsUuidString(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isUuidString',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must be a UUID`, ...options },
      validator: { validate: (v: unknown) => isUuid(v) },
    });
}

/** Text that PostgreSQL stores exactly as sent: no NUL character, no unpaired UTF-16 surrogate. */
export function IsStorableText(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isStorableText',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must not contain NUL characters or unpaired surrogates`, ...options },
      validator: { validate: (v: unknown) => typeof v !== 'string' || isStorableText(v) },
    });
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 date-time with a zone (`2026-11-23T10:00:00Z`), e.g. a `since`/`until` filter. */
export function IsRfc3339(options?: ValidationOptions) {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isRfc3339',
      target: object.constructor,
      propertyName,
      options: { message: `${propertyName} must be an RFC 3339 date-time such as 2026-01-31T00:00:00Z`, ...options },
      validator: { validate: (v: unknown) => typeof v === 'string' && RFC3339.test(v) && !Number.isNaN(Date.parse(v)) },
    });
}
